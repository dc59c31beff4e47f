"""Env steps per second of gabp.gym.GameEnv against a plain Python client (socket and json) doing the same
steps, on the demo game's herding task, in one run.

    python gabp-py/benches/env_steps.py --gabp target/release/gabp

Both play the same fixed sequence of actions from the same seed, resetting when an episode ends; rounds take
turns. Prints each figure's median over the rounds and the ratio.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import time
from typing import Any, List

import gabp.gym
from calls import start_mod
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
    rates: dict[str, list[float]] = {"GameEnv": [], "plain": []}
    try:
        for _ in range(options.rounds):
            rates["GameEnv"].append(game_env(endpoint, options.steps))
            rates["plain"].append(plain(endpoint, options.steps))
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
    median = {name: statistics.median(values) for name, values in rates.items()}
    for name, value in median.items():
        print(f"{name:10} {value:>10,.0f} steps/s (median of {options.rounds})")
    print(f"GameEnv / plain: {median['GameEnv'] / median['plain']:.2f}x")


if __name__ == "__main__":
    main()
