"""A stand-in ACP agent on raw lines (no SDK, so that timing it measures the pipes and the proxy,
not a library): it answers ``initialize`` (version 1), ``session/new`` (``session-1``) and any
other request of the editor at once with an empty result; for ``session/prompt`` it first asks
the editor to read ``PROJECT/src/a.py`` (``fs/read_text_file``, the prompt's text is PROJECT),
then answers the prompt once the editor has answered it."""

from __future__ import annotations

import json
import sys


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    prompts: dict[int, object] = {}
    asked = 0
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method is None:  # the editor's answer to our read: the prompt it belongs to is answered
            send({"jsonrpc": "2.0", "id": prompts.pop(message["id"]), "result": {"stopReason": "end_turn"}})
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"sessionId": "session-1"}})
        elif method == "session/prompt":
            asked += 1
            prompts[asked] = message["id"]
            path = message["params"]["prompt"][0]["text"] + "/src/a.py"
            send({"jsonrpc": "2.0", "id": asked, "method": "fs/read_text_file",
                  "params": {"sessionId": "session-1", "path": path}})
        elif "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})


if __name__ == "__main__":
    main()
