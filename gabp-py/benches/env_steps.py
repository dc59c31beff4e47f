"""Env steps per second of gabp.gym.GameEnv against a plain Python client (socket and json) doing the same
steps, on the demo game's herding task, in one run.

    python gabp-py/benches/env_steps.py --gabp target/release/gabp

Both play the same fixed sequence of actions from the same seed, resetting when an episode ends; rounds take
turns. Prints each figure's median over the rounds and the ratio (the median of the rounds' ratios).

Each round also measures the ceiling no client can pass: the plain client's `demo/echo` round trip and
`gabp bench`'s (Rust, one call at a time). A plain step's time less its echo is the game's own work per step,
which every client waits for; the fastest any client could step is that work plus gabp bench's round trip, and
the ceiling is the plain step's time over that.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import time
from typing import Any, List

import gabp.gym
from calls import plain_sequential, rust, start_mod
from plain_client import TOKEN, PlainClient


def actions(steps: int) -> List[int]:
    return [(i * 7 + i // 5) % 5 for i in range(steps)]


def game_env(endpoint: str, steps: int) -> float:
    env = gabp.gym.GameEnv(endpoint, TOKEN)
    try:
        env.reset(seed=1)
        plan = actions(steps)
        started = time.perf_counter()
        for action in plan:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        return steps / (time.perf_counter() - started)
    finally:
        env.close()


def plain(endpoint: str, steps: int) -> float:
    client = PlainClient(endpoint)
    client.request("env/reset", {"seed": 1})
    plan = actions(steps)
    started = time.perf_counter()
    for action in plan:
        result: Any = client.request("env/step", {"action": action})
        if result["terminated"] or result["truncated"]:
            client.request("env/reset", {})
    rate = steps / (time.perf_counter() - started)
    client.sock.close()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gabp", required=True, help="the gabp binary (a release build)")
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    process, endpoint = start_mod(options.gabp)
    rates: dict[str, list[float]] = {"GameEnv": [], "plain": [], "plain echo": [], "gabp bench": []}
    try:
        for _ in range(options.rounds):
            rates["GameEnv"].append(game_env(endpoint, options.steps))
            rates["plain"].append(plain(endpoint, options.steps))
            rates["plain echo"].append(plain_sequential(endpoint, options.steps))
            rates["gabp bench"].append(rust(options.gabp, endpoint, options.steps, 1))
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
    median = {name: statistics.median(values) for name, values in rates.items()}
    for name, value in median.items():
        unit = "steps/s" if name in ("GameEnv", "plain") else "calls/s"
        print(f"{name:10} {value:>10,.0f} {unit} (median of {options.rounds})")
    rounds = list(zip(rates["GameEnv"], rates["plain"], rates["plain echo"], rates["gabp bench"]))
    ratio = statistics.median(env / plain_rate for env, plain_rate, _, _ in rounds)
    own = statistics.median(1 / plain_rate - 1 / echo for _, plain_rate, echo, _ in rounds)
    ceiling = statistics.median(
        (1 / plain_rate) / max(1 / plain_rate - 1 / echo + 1 / bench, 1e-9) for _, plain_rate, echo, bench in rounds
    )
    print(f"GameEnv / plain: {ratio:.2f}x")
    print(f"the game's own work per step: {own * 1e6:.0f} us; ceiling for any client: {ceiling:.2f}x plain")

if __name__ == "__main__":
    main()
