from ruledrift.cli import main

raise SystemExit(main())
