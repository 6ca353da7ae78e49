"""A `command` assertion program for tests, told what to do by its first argument:

- `pass`, `fail REASON`: exit 0, or exit 1 with REASON on stdout;
- `exit CODE`: exit with CODE, a line on stderr;
- `sleep`: never answer (the timeout's case);
- `huge`: write 1 MB to stdout, then exit 1;
- `hostile`: exit 1 with terminal escapes, line ends, bidi controls, invalid UTF-8 and 10,000
  characters on stdout;
- `record FILE`: write the request read on stdin to FILE, then pass.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

mode = sys.argv[1]
request = sys.stdin.buffer.read()
if mode == "pass":
    sys.exit(0)
if mode == "fail":
    print(sys.argv[2])
    sys.exit(1)
if mode == "exit":
    print("something broke in the check", file=sys.stderr)
    sys.exit(int(sys.argv[2]))
if mode == "sleep":
    time.sleep(3600)
if mode == "huge":
    sys.stdout.write("x" * 1_000_000)
    sys.exit(1)
if mode == "hostile":
    out = sys.stdout.buffer
    out.write(b"\x1b[31mred\x1b[0m\nline two\r\n\xe2\x80\xaeevil\xff\xfe ::error::pwned ")
    out.write(b"y" * 10_000)
    sys.exit(1)
if mode == "record":
    Path(sys.argv[2]).write_bytes(request)
    sys.exit(0)
sys.exit(f"unknown mode {mode}")
