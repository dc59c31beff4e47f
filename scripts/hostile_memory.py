#!/usr/bin/env python3
"""Peak resident memory of gabp processes under hostile peers (SPEC/1.0 security.md §7), run by hand.

Scenarios, each in a fresh process, with a healthy bridge calling `demo/echo` throughout and its round trips
timed:

  unauth  4 connections that never say hello and never read, sending 1 MiB requests whose method names fill
          them (`gabp mod`)
  echo    4 authenticated connections that never read, sending 1 MiB `demo/echo` calls (`gabp mod`)
  tail    a mod (this script) sending 1 MiB events to `gabp tail`, whose output nobody reads (`gabp tail`);
          the healthy calls go to a separate `gabp mod` only to keep the report's shape

Prints, per scenario, the idle and peak resident memory (VmRSS before, VmHWM after) and the healthy client's
p50 and p99 round trip. Usage: scripts/hostile_memory.py --gabp target/release/gabp [--seconds 8] [SCENARIO...]
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

TOKEN = "686f7374696c652d6d656d6f72792d746f6b656e2d30313233343536373839"
MIB = 1024 * 1024


def frame(message):
    body = json.dumps(message, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(method, params=None):
    message = {"v": "gabp/1", "id": str(uuid.uuid4()), "type": "request", "method": method}
    if params is not None:
        message["params"] = params
    return message


def hello_params():
    return {
        "token": TOKEN,
        "bridgeVersion": "1.0.0",
        "platform": "linux",
        "launchId": str(uuid.uuid4()),
        "clientInfo": {"name": "hostile-memory", "version": "0"},
    }


class Reader:
    """Reads frames from a socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def frame(self):
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("closed")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        length = next(
            int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        while len(self.buf) < length:
            chunk = self.sock.recv(max(65536, length - len(self.buf)))
            if not chunk:
                raise EOFError("closed")
            self.buf += chunk
        body, self.buf = self.buf[:length], self.buf[length:]
        return json.loads(body)

    def answer(self, message_id):
        while True:
            message = self.frame()
            if message.get("type") == "response" and message.get("id") == message_id:
                return message


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port, attempts=200):
    for _ in range(attempts):
        try:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def hello(sock):
    reader = Reader(sock)
    message = request("session/hello", hello_params())
    sock.sendall(frame(message))
    answer = reader.answer(message["id"])
    if "error" in answer:
        raise RuntimeError(f"hello refused: {answer['error']}")
    return reader, answer["result"]


def status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for {pid}")


def start_mod(gabp, port):
    env = dict(os.environ, GABP_TOKEN=TOKEN, RUST_LOG="warn")
    return subprocess.Popen(
        [gabp, "mod", "--listen", f"tcp://127.0.0.1:{port}", "--no-bridge-json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def end(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


class Healthy(threading.Thread):
    """A bridge calling demo/echo with a short text, one call at a time, timing each round trip."""

    def __init__(self, port, stop):
        super().__init__(daemon=True)
        self.sock = connect(port)
        self.reader, _ = hello(self.sock)
        self.stop = stop
        self.times = []
        self.failed = None

    def call(self):
        message = request("tools/call", {"name": "demo/echo", "arguments": {"value": "hi"}})
        started = time.perf_counter()
        self.sock.sendall(frame(message))
        answer = self.reader.answer(message["id"])
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return time.perf_counter() - started

    def run(self):
        try:
            while not self.stop.is_set():
                self.times.append(self.call())
                time.sleep(0.005)
        except Exception as e:  # reported in the summary
            self.failed = repr(e)

    def percentiles(self):
        times = sorted(self.times)
        if not times:
            return float("nan"), float("nan")
        pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000
        return pick(0.50), pick(0.99)


def flood(sock, payload, stop):
    """Sends `payload` again and again without reading, until told to stop or the peer closes."""
    sent = 0
    sock.settimeout(0.5)
    while not stop.is_set():
        try:
            sock.sendall(payload)
            sent += len(payload)
        except socket.timeout:
            continue
        except OSError:
            break
    return sent


def attack(args, port, make_payload, authenticate):
    stop = threading.Event()
    threads, socks = [], []
    for _ in range(4):
        sock = connect(port)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        if authenticate:
            hello(sock)
        socks.append(sock)
        t = threading.Thread(target=flood, args=(sock, make_payload(), stop), daemon=True)
        t.start()
        threads.append(t)
    time.sleep(args.seconds)
    stop.set()
    for t in threads:
        t.join(5)
    for s in socks:
        s.close()


def scenario_mod(args, make_payload, authenticate):
    port = free_port()
    mod = start_mod(args.gabp, port)
    try:
        stop = threading.Event()
        healthy = Healthy(port, stop)
        for _ in range(50):
            healthy.call()
        idle = status(mod.pid, "VmRSS")
        healthy.start()
        attack(args, port, make_payload, authenticate)
        stop.set()
        healthy.join(10)
        return idle, status(mod.pid, "VmHWM"), healthy
    finally:
        end(mod)


def unauth_payload():
    method = "a/" + "b" * (MIB - 200)
    return frame(request(method))


def echo_payload():
    return frame(request("tools/call", {"name": "demo/echo", "arguments": {"value": "x" * (MIB - 300)}}))


def scenario_tail(args):
    # The welcome of a real gabp mod, served by this script as its own.
    mod_port = free_port()
    mod = start_mod(args.gabp, mod_port)
    try:
        _, welcome = hello(connect(mod_port))
        stop = threading.Event()
        healthy = Healthy(mod_port, stop)
        healthy.start()
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        tail = subprocess.Popen(
            [args.gabp, "tail", "--connect", f"tcp://127.0.0.1:{port}", "--no-reconnect", "player/move"],
            env=dict(os.environ, GABP_TOKEN=TOKEN),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            sock, _ = listener.accept()
            reader = Reader(sock)
            idle = None
            for _ in range(2):
                message = reader.frame()
                sock.sendall(frame({"v": "gabp/1", "id": message["id"], "type": "response", "result": (
                    welcome if message["method"] == "session/hello" else {"subscribed": ["player/move"]})}))
            time.sleep(0.5)
            idle = status(tail.pid, "VmRSS")
            payload = {"text": "x" * (MIB - 300)}
            deadline = time.monotonic() + args.seconds
            seq = 0
            sock.settimeout(0.5)
            while time.monotonic() < deadline:
                event = {"v": "gabp/1", "id": str(uuid.uuid4()), "type": "event", "channel": "player/move",
                         "seq": seq, "payload": payload}
                try:
                    sock.sendall(frame(event))
                    seq += 1
                except socket.timeout:
                    continue
            peak = status(tail.pid, "VmHWM")
        finally:
            end(tail)
        stop.set()
        healthy.join(10)
        return idle, peak, healthy
    finally:
        end(mod)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gabp", required=True, help="the gabp binary")
    parser.add_argument("--seconds", type=float, default=8.0, help="how long each attack lasts")
    parser.add_argument("scenarios", nargs="*", default=["unauth", "echo", "tail"])
    args = parser.parse_args()
    for name in args.scenarios:
        if name == "unauth":
            idle, peak, healthy = scenario_mod(args, unauth_payload, authenticate=False)
        elif name == "echo":
            idle, peak, healthy = scenario_mod(args, echo_payload, authenticate=True)
        elif name == "tail":
            idle, peak, healthy = scenario_tail(args)
        else:
            sys.exit(f"unknown scenario {name!r}")
        p50, p99 = healthy.percentiles()
        print(
            f"{name:7} idle {idle / MIB:7.1f} MiB  peak {peak / MIB:8.1f} MiB  above idle {(peak - idle) / MIB:8.1f} MiB"
            f"  healthy p50 {p50:7.2f} ms  p99 {p99:8.2f} ms  calls {len(healthy.times)}"
            + (f"  FAILED: {healthy.failed}" if healthy.failed else ""),
            flush=True,
        )


if __name__ == "__main__":
    main()
