"""A stand-in MCP server for transport tests: it records every line it receives (in the file named
by ``BGC_TEST_MCP_RECORD``) and answers each request with its own bytes, so a test sees exactly
what the proxy forwarded, byte for byte.

A line ``{"method": "tools/call", "params": {"name": "crash"}}`` makes it exit with status 3
without answering; ``{"method": "hang"}`` makes it ignore its input from then on (a hung server);
``{"method": "exit"}`` makes it exit with status 4 at once; ``{"method": "deaf"}`` makes it ignore
SIGTERM, SIGINT and SIGHUP; ``{"method": "say", "params": {"line": TEXT}}`` makes it write TEXT
(then a line feed) as it is.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

record = open(os.environ["BGC_TEST_MCP_RECORD"], "ab", buffering=0)
if "BGC_TEST_MCP_PID" in os.environ:  # where a test finds the server, to see it is gone
    with open(os.environ["BGC_TEST_MCP_PID"], "w", encoding="utf-8") as handle:
        handle.write(str(os.getpid()))
hung = False
for line in sys.stdin.buffer:
    record.write(line)
    message = json.loads(line)
    if message.get("method") == "tools/call" and message["params"].get("name") == "crash":
        os._exit(3)
    if message.get("method") == "exit":
        os._exit(4)
    if message.get("method") == "deaf":
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)
    if message.get("method") == "say":
        sys.stdout.buffer.write(message["params"]["line"].encode("utf-8", "surrogateescape") + b"\n")
        sys.stdout.buffer.flush()
        continue
    if message.get("method") == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        while True:
            time.sleep(1)
    if "id" in message and "method" in message:
        sys.stdout.buffer.write(
            b'{"jsonrpc":"2.0","id":'
            + json.dumps(message["id"]).encode()
            + b',"result":{"echo":'
            + line.rstrip(b"\n")
            + b"}}\n"
        )
        sys.stdout.buffer.flush()
    elif message.get("method") == "notify-me":
        # a server-to-client request and a notification, to check they pass through untouched
        sys.stdout.buffer.write(
            b'{"jsonrpc":"2.0","id":"s1","method":"roots/list"}\n{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}\n'
        )
        sys.stdout.buffer.flush()
