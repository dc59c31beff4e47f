"""Calls per second from Python against `gabp bench` (Rust) on the same mod, in one run.

    python gabp-py/benches/calls.py --gabp target/release/gabp

Starts the demo game (`gabp mod`), then takes turns, round by round: `gabp bench` one call at a time and 64 in
flight; `gabp bench --from-threads` one call at a time (the floor of a binding that blocks a thread outside
the runtime on each call, as the C and C# bindings do: each call and each answer crosses threads); gabp.Bridge
one call at a time (its connection runs on the calling thread); gabp.aio 64 in flight; and a plain Python client
written with `socket` and `json` one call at a time (what users write without this package). Each calls `demo/echo`. Prints each
figure's median over the rounds and the ratios to `gabp bench` (each the median of the rounds' ratios).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import time
from typing import Any, Callable, Dict, List, Tuple

import gabp
import gabp.aio
from plain_client import TOKEN, PlainClient

ARGS = {"value": "gabp"}


def start_mod(binary: str) -> Tuple["subprocess.Popen[str]", str]:
    process = subprocess.Popen(
        [binary, "mod", "--listen", "tcp://127.0.0.1:0", "--no-bridge-json"],
        env={**os.environ, "GABP_TOKEN": TOKEN, "RUST_LOG": "warn"},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    found = re.search(r"listening on (\S+)", process.stdout.readline())
    if not found:
        raise SystemExit("gabp mod did not start")
    return process, found.group(1)


def rust(binary: str, endpoint: str, calls: int, concurrency: int, from_threads: bool = False) -> float:
    threads = ["--from-threads"] if from_threads else []
    ran = subprocess.run(
        [binary, "bench", "--connect", endpoint, "--calls", str(calls), "--concurrency", str(concurrency), "--json"]
        + threads,
        env={**os.environ, "GABP_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        check=True,
    )
    rate: float = json.loads(ran.stdout)["gabp"]["calls_per_s"]
    return rate


def python_sequential(endpoint: str, calls: int) -> float:
    with gabp.Bridge.connect(endpoint, TOKEN) as game:
        for _ in range(200):
            game.call("demo/echo", ARGS)
        started = time.perf_counter()
        for _ in range(calls):
            game.call("demo/echo", ARGS)
        return calls / (time.perf_counter() - started)


def python_in_flight(endpoint: str, calls: int, in_flight: int) -> float:
    async def main() -> float:
        game = await gabp.aio.Bridge.connect(endpoint, TOKEN)
        await asyncio.gather(*(game.call("demo/echo", ARGS) for _ in range(200)))
        left = calls

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await game.call("demo/echo", ARGS)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        rate = calls / (time.perf_counter() - started)
        await game.close()
        return rate

    return asyncio.run(main())


def plain_sequential(endpoint: str, calls: int) -> float:
    client = PlainClient(endpoint)
    for _ in range(200):
        client.request("tools/call", {"name": "demo/echo", "arguments": ARGS})
    started = time.perf_counter()
    for _ in range(calls):
        client.request("tools/call", {"name": "demo/echo", "arguments": ARGS})
    rate = calls / (time.perf_counter() - started)
    client.sock.close()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gabp", required=True, help="the gabp binary (a release build)")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    options = parser.parse_args()
    process, endpoint = start_mod(options.gabp)
    runs: Dict[str, Callable[[], float]] = {
        "rust_1": lambda: rust(options.gabp, endpoint, options.calls, 1),
        "rust_threads_1": lambda: rust(options.gabp, endpoint, options.calls, 1, from_threads=True),
        "python_1": lambda: python_sequential(endpoint, options.calls),
        "plain_python_1": lambda: plain_sequential(endpoint, options.calls),
        "rust_64": lambda: rust(options.gabp, endpoint, options.calls * 2, 64),
        "python_aio_64": lambda: python_in_flight(endpoint, options.calls * 2, 64),
    }
    rates: Dict[str, List[float]] = {name: [] for name in runs}
    try:
        for _ in range(options.rounds):
            for name, run in runs.items():
                rates[name].append(run())
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
    median = {name: statistics.median(values) for name, values in rates.items()}
    # Each ratio is the median of the rounds' ratios, as `gabp bench --self` takes its own: a machine that slows
    # down for a while moves both sides of a round alike.
    pairs = [
        ("python_1", "rust_1"),
        ("rust_threads_1", "rust_1"),
        ("python_1", "rust_threads_1"),
        ("python_aio_64", "rust_64"),
        ("plain_python_1", "rust_1"),
    ]
    ratios = {
        f"{a} / {b}": statistics.median(x / y for x, y in zip(rates[a], rates[b])) for a, b in pairs
    }
    if options.json:
        print(json.dumps({"calls_per_s": median, "rounds": rates, "ratios": ratios}, indent=2))
        return
    print(f"{'':16} {'calls/s (median of ' + str(options.rounds) + ')':>28}")
    for name, value in median.items():
        print(f"{name:16} {value:>28,.0f}")
    for name, value in ratios.items():
        print(f"{name:26} {value:.2f}x")


if __name__ == "__main__":
    main()
