"""A small game in pure Python, served as a GABP mod: a shepherd on a 12x12 field and a sheep that wanders.

The loop runs 20 ticks a second; its tools run on the game's thread inside ``game.pump()``, so they touch the
world without locks. Bridges may pause and step it (time control). The endpoint and token come from the GABS
environment when a launcher set them, else a free port announced in bridge.json.

    python examples/game_loop.py          # then: gabp call shepherd/move dx=1 dy=0
"""

from __future__ import annotations

import random
import signal
import sys
import threading
import time
from typing import Any, Dict, Literal

import gabp

SIZE = 12
TICK = 0.05


class Field:
    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.shepherd = [1, 1]
        self.sheep = [SIZE // 2, SIZE // 2]
        self.tick = 0

    def step(self) -> None:
        self.tick += 1
        dx, dy = self.rng.choice([(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)])
        self.sheep = [min(SIZE - 1, max(0, self.sheep[0] + dx)), min(SIZE - 1, max(0, self.sheep[1] + dy))]

    def view(self) -> Dict[str, Any]:
        return {"tick": self.tick, "shepherd": list(self.shepherd), "sheep": list(self.sheep), "size": SIZE}


def main() -> int:
    field = Field()
    game = gabp.Mod("sheep-field", "1.0.0")

    @game.tool("field/look", main_thread=True, read_only=True)
    def look() -> Dict[str, Any]:
        """Where the shepherd and the sheep are, and the tick."""
        return field.view()

    @game.tool("shepherd/move", main_thread=True)
    def move(dx: Literal[-1, 0, 1], dy: Literal[-1, 0, 1]) -> Dict[str, Any]:
        """Moves the shepherd one square (or stays)."""
        x, y = field.shepherd[0] + dx, field.shepherd[1] + dy
        if not (0 <= x < SIZE and 0 <= y < SIZE):
            raise gabp.ToolFailed(f"({x}, {y}) is off the field", data={"size": SIZE})
        field.shepherd = [x, y]
        game.publish("shepherd/moved", {"x": x, "y": y, "tick": field.tick})
        return field.view()

    game.channel("shepherd/moved")
    game.enable_time_control()
    endpoint = game.serve()
    print(f"listening on {endpoint}", flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def until_stdin_closes() -> None:
        # A launcher that closes our stdin is done with us.
        sys.stdin.read()
        stop.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    try:
        next_tick = time.monotonic()
        while not stop.is_set():
            game.pump()
            now = time.monotonic()
            if now >= next_tick:
                if game.tick():
                    field.step()
                next_tick = now + TICK
            game.wait(max(0.001, next_tick - time.monotonic()))
    except KeyboardInterrupt:
        pass
    finally:
        game.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
