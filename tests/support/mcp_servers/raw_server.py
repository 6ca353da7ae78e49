"""An MCP server over stdio written by hand (newline-delimited JSON-RPC), for answers the SDK
would never send: it completes the handshake, then answers tools/list with the JSON text given
as its argument (the `result` object, as it is).

    raw_server.py '{"tools": [{"name": 42, "inputSchema": {"type": "object"}}]}'
"""

import json
import sys

RESULT = sys.argv[1]


def send(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue  # a notification
    if method == "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}))
    elif method == "tools/list":
        send(f'{{"jsonrpc": "2.0", "id": {json.dumps(ident)}, "result": {RESULT}}}')
    else:
        error = {"code": -32601, "message": "Method not found"}
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}))
