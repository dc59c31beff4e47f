"""GABP by hand, as a user without this package writes it: the baseline of the benchmarks here."""

from __future__ import annotations

import json
import socket
import uuid
from typing import Any, Dict

TOKEN = "0123456789abcdef0123456789abcdef"


class PlainClient:
    """GABP by hand: Content-Length framing over a socket, json for the envelopes."""

    def __init__(self, endpoint: str) -> None:
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.request(
            "session/hello",
            {"token": TOKEN, "bridgeVersion": "0.1.0", "platform": "linux", "launchId": str(uuid.uuid4())},
        )

    def request(self, method: str, params: Dict[str, Any]) -> Any:
        body = json.dumps(
            {"v": "gabp/1", "id": str(uuid.uuid4()), "type": "request", "method": method, "params": params}
        ).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if sep:
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    message = json.loads(rest[:length])
                    if message.get("type") == "response":
                        return message.get("result")
                    continue
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
