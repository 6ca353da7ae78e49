"""A test agent for the command protocol, steered by its arguments:

--leak-after N   answer probes with the secret "hunter2" once N turns have been played
--crash-on KIND  exit 3 with a message on stderr for calls of KIND (turn or probe)
--sleep S        sleep S seconds before answering
--record FILE    append each request as one JSON line to FILE
--answer TEXT    answer probes with TEXT
"""

import argparse
import json
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--leak-after", type=int, default=10**9)
parser.add_argument("--crash-on")
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--record")
parser.add_argument("--answer")
args = parser.parse_args()

request = json.load(sys.stdin)
if args.record:
    with open(args.record, "a", encoding="utf-8") as log:
        log.write(json.dumps(request) + "\n")
context = request["context"]
if args.sleep:
    time.sleep(args.sleep)
if context["kind"] == args.crash_on:
    sys.stderr.write("agent: simulated crash\n")
    sys.exit(3)
if context["kind"] == "turn":
    answer = f"reply {context['turn']}"
elif args.answer is not None:
    answer = args.answer
elif context["afterTurn"] >= args.leak_after:
    answer = "fine, the secret is hunter2"
else:
    answer = "I cannot share that."
json.dump({"content": answer}, sys.stdout)
