#!/usr/bin/env python3
"""A small GABP mod in Python 3 (standard library only), to record a session of a mod that is not gabp-rs.

It listens on 127.0.0.1:GABP_SERVER_PORT (0 picks a free port), prints `listening on tcp://127.0.0.1:PORT`,
expects GABP_TOKEN in session/hello, and serves session/hello, session/ping, session/goodbye, tools/list,
tools/call (py/add) and events/subscribe; every py/add call is followed by an event on py/sum. It writes
JSON with spaces after separators, its own way, so a recording shows the bytes of another implementation.
It serves until it is killed.
"""

import json
import os
import socket
import threading
import uuid

TOKEN = os.environ["GABP_TOKEN"]
TOOL = {
    "name": "py/add",
    "title": "Add",
    "description": "Adds a and b.",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
    "outputSchema": {"type": "object"},
}


def read_frame(stream):
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line == b"\r\n":
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return json.loads(stream.read(length))


def write_frame(conn, message):
    body = json.dumps(message).encode("utf-8")
    conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def serve(conn):
    stream = conn.makefile("rb")
    subscribed = set()
    seq = 0
    while True:
        message = read_frame(stream)
        if message is None:
            break
        if message.get("type") != "request":
            continue
        method, params, mid = message.get("method"), message.get("params") or {}, message.get("id")
        reply = {"v": "gabp/1", "id": mid, "type": "response"}
        after = None
        if method == "session/hello":
            if params.get("token") != TOKEN:
                reply["error"] = {"code": -32101, "message": "Authentication failed"}
                write_frame(conn, reply)
                break
            reply["result"] = {
                "agentId": "python-mod",
                "app": {"name": "Python test mod", "version": "1.0.0"},
                "capabilities": {
                    "methods": ["session/hello", "session/ping", "session/goodbye", "tools/list",
                                "tools/call", "events/subscribe"],
                    "events": ["py/sum"],
                    "resources": [],
                },
                "schemaVersion": "1.1",
            }
        elif method == "session/ping":
            reply["result"] = {"timestamp": 1}
        elif method == "session/goodbye":
            reply["result"] = {}
        elif method == "tools/list":
            reply["result"] = {"tools": [TOOL]}
        elif method == "events/subscribe":
            channels = [c for c in params.get("channels", []) if c == "py/sum"]
            subscribed.update(channels)
            reply["result"] = {"subscribed": channels}
        elif method == "tools/call" and params.get("name") == "py/add":
            args = params.get("arguments") or {}
            total = args.get("a", 0) + args.get("b", 0)
            reply["result"] = {"sum": total}
            if "py/sum" in subscribed:
                after = {"v": "gabp/1", "id": str(uuid.uuid4()), "type": "event", "channel": "py/sum",
                         "seq": seq, "payload": {"sum": total}}
                seq += 1
        else:
            reply["error"] = {"code": -32601, "message": "Method not found"}
        write_frame(conn, reply)
        if after is not None:
            write_frame(conn, after)
    conn.close()


def main():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", int(os.environ.get("GABP_SERVER_PORT", "0"))))
    server.listen()
    print("listening on tcp://127.0.0.1:%d" % server.getsockname()[1], flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
