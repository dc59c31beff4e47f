"""examples/game_loop.py runs as a process and is driven from a bridge: look, move, hear the event, pause and
step exactly, a move off the field refused; it stops when its stdin closes."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import gabp

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "game_loop.py"


def test_the_example_game_is_served_and_played() -> None:
    child = subprocess.Popen(
        [sys.executable, str(EXAMPLE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert child.stdout is not None
        endpoint = re.search(r"listening on (\S+)", child.stdout.readline())
        assert endpoint, "the example prints its endpoint"
        with gabp.Bridge.connect() as game:
            seen = game.call("field/look")
            assert seen["shepherd"] == [1, 1] and seen["size"] == 12
            moves = game.subscribe("shepherd/moved")
            assert game.call("shepherd/move", dx=1, dy=0)["shepherd"] == [2, 1]
            event = moves.next(timeout=5)
            assert event is not None and event.payload["x"] == 2
            with pytest.raises(gabp.InvalidParams):
                game.call("shepherd/move", dx=2, dy=0)
            game.call("shepherd/move", dx=-1, dy=0)
            with pytest.raises(gabp.ToolFailed) as off:
                game.call("shepherd/move", dx=0, dy=-1)
                game.call("shepherd/move", dx=0, dy=-1)
            assert off.value.data == {"size": 12}
            game.request("time/pause")
            paused = game.call("field/look")["tick"]
            time.sleep(0.2)
            assert game.call("field/look")["tick"] == paused
            game.request("time/step", {"ticks": 5})
            assert game.call("field/look")["tick"] == paused + 5
            game.request("time/resume")
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=10) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
