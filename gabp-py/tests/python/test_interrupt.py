"""Ctrl-C interrupts a blocking call at once; Ctrl-C, a time limit or a failing progress callback cancel the call
in the mod without another call to carry the cancel; the interpreter is free while a call waits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import gabp
from conftest import TOKEN, DemoMod
from test_mod import Farm


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


def test_ctrl_c_cancels_the_call_in_the_mod_though_the_bridge_is_not_used_again() -> None:
    # A blocking bridge's connection runs only while a thread waits on it: the cancel must go out before
    # KeyboardInterrupt reaches the program, which here makes no further call.
    farm = Farm()
    endpoint = farm.start(endpoint="tcp://127.0.0.1:0", token=TOKEN)
    script = textwrap.dedent(
        f"""
        import time, gabp
        game = gabp.Bridge.connect({endpoint!r}, {TOKEN!r})
        print("calling", flush=True)
        try:
            game.call("demo/sleep", ms=20000)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            time.sleep(10)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ.copy(), start_new_session=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "calling"
        time.sleep(0.3)
        child.send_signal(signal.SIGINT)
        assert child.stdout.readline().strip() == "interrupted"
        assert farm.cancelled.wait(5), "the tool saw its call cancelled while the program slept"
    finally:
        child.kill()
        child.wait()
        farm.stop()


@pytest.mark.parametrize("end", ["time limit", "progress callback"])
def test_a_time_limit_or_a_failing_progress_callback_cancels_the_call_in_the_mod(end: str) -> None:
    def stop(*_: object) -> None:
        raise RuntimeError("enough")

    farm = Farm()
    endpoint = farm.start(endpoint="tcp://127.0.0.1:0", token=TOKEN)
    try:
        game = gabp.Bridge.connect(endpoint, TOKEN)
        if end == "time limit":
            with pytest.raises(gabp.Timeout):
                game.call("demo/sleep", ms=20000, timeout=0.3)
        else:
            with pytest.raises(RuntimeError, match="enough"):
                game.call("demo/sleep", ms=20000, on_progress=stop)
        # No further call: the cancel went out when the call ended.
        assert farm.cancelled.wait(5), f"{end}: the tool saw its call cancelled"
        game.close()
    finally:
        farm.stop()


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
