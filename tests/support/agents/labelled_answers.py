"""A command-adapter agent for the judge's measurement: it answers each probe with the labelled
answer of the item whose id is the probe's id (argv[1]: the labelled set, a JSON file)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

items = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))["items"]
answers = {item["id"]: item["answer"] for item in items}
request = json.load(sys.stdin)
context = request["context"]
content = answers.get(context.get("probe", ""), "Thanks, noted.")
json.dump({"content": content}, sys.stdout)
