"""Shared fixtures: the demo game served by `gabp mod` (a mod nobody here wrote in Python), and a Python mod."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO, Iterator, List

import pytest

import gabp

TOKEN = "0123456789abcdef0123456789abcdef"


class DemoMod:
    """A `gabp mod` process: its endpoint, and its log."""

    def __init__(self, process: "subprocess.Popen[str]", endpoint: str) -> None:
        self.process = process
        self.endpoint = endpoint
        self.log: List[str] = []

    def connect(self, **kwargs: object) -> gabp.Bridge:
        return gabp.Bridge.connect(self.endpoint, TOKEN, **kwargs)  # type: ignore[arg-type]


def gabp_bin() -> str:
    path = os.environ.get("GABP_BIN")
    if not path or not Path(path).exists():
        pytest.skip("GABP_BIN does not name the gabp binary (tests/python.rs sets it)")
    return path


def start_demo(*args: str, token: bool = True) -> DemoMod:
    process = subprocess.Popen(
        [gabp_bin(), "mod", "--listen", "tcp://127.0.0.1:0", *args, *(("--no-bridge-json",) if token else ())],
        env={**os.environ, "RUST_LOG": "info", **({"GABP_TOKEN": TOKEN} if token else {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stderr is not None
    for line in process.stdout:
        found = re.search(r"listening on (\S+)", line)
        if found:
            demo = DemoMod(process, found.group(1))
            for stream in (process.stdout, process.stderr):

                def drain(stream: "IO[str]" = stream) -> None:
                    for rest in stream:
                        demo.log.append(rest)

                threading.Thread(target=drain, daemon=True).start()
            return demo
    raise RuntimeError(f"gabp mod exited with {process.wait()} before listening")


def stop_demo(demo: DemoMod) -> None:
    if demo.process.poll() is None:
        os.killpg(demo.process.pid, signal.SIGTERM)
    try:
        demo.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(demo.process.pid, signal.SIGKILL)
        demo.process.wait()


@pytest.fixture
def demo() -> Iterator[DemoMod]:
    demo = start_demo()
    yield demo
    stop_demo(demo)


@pytest.fixture
def game(demo: DemoMod) -> Iterator[gabp.Bridge]:
    with demo.connect() as bridge:
        yield bridge


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own, so that no test reads or writes the user's bridge.json or sees a launcher's settings."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for name in ("GABP_SERVER_PORT", "GABP_TOKEN", "GABS_GAME_ID"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path
