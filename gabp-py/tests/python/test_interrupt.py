"""Ctrl-C interrupts a blocking call at once, and the interpreter is free while a call waits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import gabp
from conftest import TOKEN, DemoMod


def test_ctrl_c_interrupts_a_blocking_call(demo: DemoMod) -> None:
    script = textwrap.dedent(
        f"""
        import sys, time, gabp
        game = gabp.Bridge.connect({demo.endpoint!r}, {TOKEN!r})
        print("calling", flush=True)
        started = time.monotonic()
        try:
            game.call("demo/sleep", ms=20000)
        except KeyboardInterrupt:
            print("interrupted after %.2f s" % (time.monotonic() - started), flush=True)
            print(game.call("demo/echo", value="after"), flush=True)
            sys.exit(0)
        sys.exit(3)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ.copy(), start_new_session=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "calling"
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=10)
    assert child.returncode == 0, out
    seconds = float(out.split("interrupted after ")[1].split(" s")[0])
    assert seconds < 2, out
    assert "{'value': 'after'}" in out


def test_the_interpreter_is_free_while_a_call_waits(game: gabp.Bridge) -> None:
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    game.call("demo/sleep", ms=300)
    done.set()
    counter.join()
    assert ticks > 50, f"another Python thread ran {ticks} times in 300 ms"
