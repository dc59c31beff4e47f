"""The paddle example (a Bevy game served by gabp-bevy) driven through `gabp mcp` by the official MCP Python
SDK: started from config.json, paused, stepped 10 ticks with its ball's Transform read through `ecs/query`
before and after, played with a key tap, and heard bouncing on `ball/bounced`.

Usage: python mcp_paddle.py PATH/TO/gabp PATH/TO/paddle
Prints one line per check and `N passed, M failed`; exits 1 when any failed.
"""

import asyncio
import json
import os
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

GABP, PADDLE = (os.path.abspath(p) for p in sys.argv[1:3])
TRANSFORM = "bevy_transform::components::transform::Transform"
RESULTS = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(f"ok   {name}" if condition else f"FAIL {name}: {detail}")
    return condition


def structured(result):
    return result.structured_content or {}


def x_of(value):
    """The x of a Transform's translation: bevy_math writes a Vec3 as [x, y, z]."""
    translation = value[TRANSFORM]["translation"]
    return translation[0] if isinstance(translation, list) else translation["x"]


async def session(directory):
    config = {"version": "1.0", "games": {"paddle": {
        "id": "paddle", "name": "Paddle (Bevy)", "launchMode": "DirectPath", "target": PADDLE,
        "env": {"RUST_LOG": "warn"}}}}
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f)
    params = StdioServerParameters(command=GABP, args=["mcp", "--config-dir", directory],
                                   env={"PATH": os.environ.get("PATH", ""), "HOME": directory})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()

            async def call(tool, arguments):
                result = await s.call_tool("games_call_tool", {
                    "gameId": "paddle", "tool": tool, "arguments": arguments})
                if result.is_error:
                    raise AssertionError(f"{tool}: {result.content[0].text}")
                return structured(result)

            async def x_with(marker):
                found = await call("ecs/query", {"components": [TRANSFORM], "with": [f"paddle::{marker}"]})
                entities = found["entities"]
                assert len(entities) == 1, found
                return x_of(entities[0]["components"])

            started = await s.call_tool("games_start", {"gameId": "paddle"})
            if not check("gabp mcp starts the Bevy game from config.json",
                         structured(started).get("code") == "started_connected", started.content[0].text):
                return
            names = structured(await s.call_tool("games_tool_names", {"gameId": "paddle", "limit": 100}))
            listed = {t["localName"] for t in names.get("tools", [])}
            check("its ECS tools are listed", {"ecs/query", "ecs/mutate", "ecs/schema"} <= listed, listed)

            paused = structured(await s.call_tool("games_time", {"gameId": "paddle", "action": "pause"}))
            check("games_time pauses it", paused.get("paused") is True, paused)

            # Put the ball in the middle, moving right one unit a tick, so that 10 ticks meet no wall.
            ball = (await call("ecs/query", {"components": ["paddle::Ball"]}))["entities"][0]["entity"]
            await call("ecs/mutate", {"entity": ball, "component": TRANSFORM, "path": ".translation.x",
                                      "value": 0.0})
            await call("ecs/mutate", {"entity": ball, "component": "paddle::Ball", "path": ".velocity",
                                      "value": 1.0})
            before = await x_with("Ball")
            stepped = structured(await s.call_tool("games_time", {"gameId": "paddle", "action": "step",
                                                                  "ticks": 10}))
            after = await x_with("Ball")
            check("10 ticks move the ball exactly 10 units", (before, after) == (0.0, 10.0), (before, after))
            check("the step answers the tick after it, still paused",
                  stepped.get("paused") is True and stepped.get("tick") == paused.get("tick") + 10,
                  (paused, stepped))
            await asyncio.sleep(0.2)
            check("paused, the ball stays", await x_with("Ball") == 10.0)

            paddle = await x_with("Paddle")
            tapped = await s.call_tool("games_input", {"gameId": "paddle", "key": "ArrowRight"})
            check("games_input taps a key", not tapped.is_error, tapped.content[0].text)
            moved = None
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                moved = await x_with("Paddle")
                if moved != paddle:
                    break
                await asyncio.sleep(0.02)
            check("the tap moves the paddle one unit right", moved == paddle + 1.0, (paddle, moved))
            bad = await s.call_tool("games_input", {"gameId": "paddle", "key": "arrowright"})
            check("an unknown key name is refused (-32602), naming the key",
                  bad.is_error and "-32602" in bad.content[0].text and "arrowright" in bad.content[0].text,
                  bad.content[0].text)

            await s.call_tool("games_subscribe", {"gameId": "paddle", "channels": ["ball/bounced"]})
            await s.call_tool("games_time", {"gameId": "paddle", "action": "step", "ticks": 10})
            events = structured(await s.call_tool("games_events", {"gameId": "paddle", "waitMs": 5000}))
            got = events.get("events", [])
            check("the bounce at the wall is an event", [e["payload"] for e in got] == [{"x": 20.0}], events)
            check("with the channel and its sequence number",
                  got and got[0].get("channel") == "ball/bounced" and isinstance(got[0].get("seq"), int), got)

            resumed = structured(await s.call_tool("games_time", {"gameId": "paddle", "action": "resume"}))
            check("games_time resumes it", resumed.get("paused") is False, resumed)
            stopped = await s.call_tool("games_stop", {"gameId": "paddle"})
            check("the game stops", not stopped.is_error, stopped.content[0].text)


def main():
    with tempfile.TemporaryDirectory() as directory:
        try:
            asyncio.run(session(directory))
        except AssertionError as e:
            check("no call failed", False, e)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] or not RESULTS["passed"] else 0)


if __name__ == "__main__":
    main()
