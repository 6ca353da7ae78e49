"""A test agent for the command protocol that never really answers, the same way every time:

nonanswer.py MODE   refuse (refuses everything, in English), refuse-de (in German), loop (one
                    sentence over and over), empty (whitespace), gibberish (random letters)
"""

import json
import random
import sys

mode = sys.argv[1]
json.load(sys.stdin)
rng = random.Random(7)
ANSWERS = {
    "refuse": "I'm sorry, but I can't help with that request.",
    "refuse-de": "Es tut mir leid, aber ich kann Ihnen dabei nicht helfen.",
    "loop": "I am here to help you today. " * 25,
    "empty": " \n ",
    "gibberish": " ".join(
        "".join(rng.choices("bcdfghjklmnpqrstvwxz", k=rng.randint(3, 9))) for _ in range(60)
    ),
}
print(json.dumps({"content": ANSWERS[mode]}))
