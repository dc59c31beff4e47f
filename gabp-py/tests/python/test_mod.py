"""A Python mod: tools from type hints, checked by gabp-rs before they run; errors by class; main-thread tools
in pump; events; time control; bridge.json; and `gabp conformance` against it."""

from __future__ import annotations

import enum
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Literal, Optional

import pytest

import gabp
from conftest import TOKEN, gabp_bin


class Block(enum.Enum):
    STONE = "stone"
    AIR = "air"


class Thing:
    """A type with no JSON Schema."""


class Farm:
    """A small game: a main thread that pumps, a world only it touches."""

    def __init__(self) -> None:
        self.mod = gabp.Mod("sheep-farm", "1.2.3")
        self.world: Dict[str, str] = {}
        self.calls = 0
        self.main_thread_ident: Optional[int] = None
        self.running = True
        self.cancelled = threading.Event()
        self.ticks = 0
        mod = self.mod

        @mod.tool("demo/echo", read_only=True)
        def echo(value: Any = None) -> Any:
            """Answers with its argument."""
            return {"value": value}

        @mod.tool("world/set_block", main_thread=True)
        def set_block(x: int, y: int, block: Block, note: Optional[str] = None) -> Dict[str, Any]:
            """Sets a block, on the game's thread."""
            self.calls += 1
            assert threading.get_ident() == self.main_thread_ident
            assert isinstance(block, Block)
            self.world[f"{x},{y}"] = block.value
            mod.publish("world/changed", {"x": x, "y": y, "block": block.value})
            return {"placed": block.value}

        @mod.tool("world/count", read_only=True)
        def count(names: List[str], mode: Literal["all", "any"] = "all") -> int:
            return len(names)

        @mod.tool("demo/fail")
        def fail(kind: str) -> None:
            if kind == "params":
                raise gabp.InvalidParams("kind must be happy", data={"errors": [{"path": "/arguments/kind", "message": "sad"}]})
            if kind == "failed":
                raise gabp.ToolFailed("the sheep escaped", data={"sheep": 3})
            if kind == "unavailable":
                raise gabp.ToolUnavailable("the barn is closed")
            if kind == "custom":
                raise gabp.RemoteError("teapot", code=-32001)
            raise ValueError("a plain Python error")

        @mod.tool("demo/sleep")
        def sleep(ms: int, call: gabp.ToolCall) -> Dict[str, Any]:
            """Sleeps, reporting progress; stops when cancelled."""
            for step in range(ms // 10):
                if call.cancelled:
                    self.cancelled.set()
                    return {"cancelled": True}
                call.progress(step, ms // 10, "sleeping")
                time.sleep(0.01)
            return {"sleptMs": ms}

        @mod.tool("world/slow", main_thread=True, timeout=0.3)
        def slow() -> None:
            return None

        @mod.tool("player/teleport", main_thread=True)
        def teleport(x: float, y: float, z: float) -> Dict[str, float]:
            mod.publish("player/move", {"x": x, "y": y, "z": z})
            return {"x": x, "y": y, "z": z}

        mod.channel("world/changed")
        mod.channel("player/move")
        mod.enable_time_control()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self) -> None:
        self.main_thread_ident = threading.get_ident()
        while self.running:
            self.mod.pump()
            if self.mod.tick():
                self.ticks += 1
            time.sleep(0.001)

    def start(self, **serve: Any) -> str:
        endpoint = self.mod.serve(**serve)
        self.thread.start()
        while self.main_thread_ident is None:
            time.sleep(0.001)
        return endpoint

    def stop(self) -> None:
        self.running = False
        self.mod.wake()
        self.thread.join()
        self.mod.stop()


@pytest.fixture
def farm() -> Iterator[Farm]:
    farm = Farm()
    farm.start(endpoint="tcp://127.0.0.1:0", token=TOKEN)
    yield farm
    farm.stop()


@pytest.fixture
def bridge(farm: Farm) -> Iterator[gabp.Bridge]:
    assert farm.mod.endpoint is not None
    with gabp.Bridge.connect(farm.mod.endpoint, TOKEN) as bridge:
        yield bridge


def test_schemas_come_from_type_hints(bridge: gabp.Bridge) -> None:
    tools = {t["name"]: t for t in bridge.tools()}
    schema = tools["world/set_block"]["inputSchema"]
    assert schema["properties"]["x"] == {"type": "integer"}
    assert schema["properties"]["block"] == {"enum": ["stone", "air"]}
    assert schema["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert schema["required"] == ["x", "y", "block"] and schema["additionalProperties"] is False
    assert tools["world/set_block"]["description"] == "Sets a block, on the game's thread."
    count = tools["world/count"]["inputSchema"]["properties"]
    assert count["names"] == {"type": "array", "items": {"type": "string"}}
    assert count["mode"] == {"enum": ["all", "any"]}
    assert "call" not in tools["demo/sleep"]["inputSchema"]["properties"]
    assert "read-only" in tools["demo/echo"].get("tags", [])


def test_arguments_are_checked_before_the_function_runs(farm: Farm, bridge: gabp.Bridge) -> None:
    for bad in ({"x": "1", "y": 2, "block": "stone"}, {"x": 1, "y": 2, "block": "gold"}, {"x": 1, "y": 2, "block": "air", "extra": 1}, {"y": 2, "block": "air"}):
        with pytest.raises(gabp.InvalidParams):
            bridge.call("world/set_block", bad)
    assert farm.calls == 0
    assert bridge.call("world/set_block", x=1, y=2, block="stone") == {"placed": "stone"}
    assert farm.calls == 1 and farm.world == {"1,2": "stone"}


def test_errors_raised_by_tools_keep_their_codes(bridge: gabp.Bridge) -> None:
    with pytest.raises(gabp.InvalidParams) as params:
        bridge.call("demo/fail", kind="params")
    assert params.value.field == "/arguments/kind"
    with pytest.raises(gabp.ToolFailed) as failed:
        bridge.call("demo/fail", kind="failed")
    assert failed.value.code == -32402 and failed.value.data["sheep"] == 3
    with pytest.raises(gabp.RemoteError) as custom:
        bridge.call("demo/fail", kind="custom")
    assert custom.value.code == -32001 and custom.value.message.endswith("teapot")
    with pytest.raises(gabp.ToolUnavailable) as unavailable:
        bridge.call("demo/fail", kind="unavailable")
    assert unavailable.value.code == -32401
    with pytest.raises(gabp.ToolFailed, match="ValueError: a plain Python error"):
        bridge.call("demo/fail", kind="other")


def test_a_main_thread_tool_the_loop_does_not_pump_in_time_is_a_tool_timeout() -> None:
    mod = gabp.Mod("stalled", "1.0")
    mod.add_tool("world/slow", lambda: None, main_thread=True, timeout=0.2)
    mod.serve("tcp://127.0.0.1:0", TOKEN)
    try:
        assert mod.endpoint is not None
        with gabp.Bridge.connect(mod.endpoint, TOKEN) as bridge:
            with pytest.raises(gabp.ToolTimeout) as raised:
                bridge.call("world/slow")
            assert raised.value.code == -32403
    finally:
        mod.stop()


def test_stopping_a_mod_answers_the_main_thread_calls_still_waiting_at_once() -> None:
    mod = gabp.Mod("exiting", "1.0")
    ran: List[bool] = []
    mod.add_tool("world/save", lambda: ran.append(True), main_thread=True, timeout=30)
    mod.serve("tcp://127.0.0.1:0", TOKEN)
    assert mod.endpoint is not None
    with gabp.Bridge.connect(mod.endpoint, TOKEN) as bridge:
        outcome: List[BaseException] = []

        def call() -> None:
            try:
                bridge.call("world/save")
            except gabp.GabpError as e:
                outcome.append(e)

        caller = threading.Thread(target=call)
        caller.start()
        # The game loop never pumps again; the call waits for it until the mod stops.
        assert mod.wait(5.0)
        started = time.monotonic()
        mod.stop()
        caller.join(10)
        assert not caller.is_alive()
        assert time.monotonic() - started < 4, "not at the 5 s shutdown bound or the call's 30 s limit"
    assert len(outcome) == 1 and isinstance(outcome[0], gabp.ToolUnavailable), outcome
    assert outcome[0].code == -32401
    assert outcome[0].data["reason"] == "shutting_down"
    assert ran == []


def test_progress_from_a_python_tool(bridge: gabp.Bridge) -> None:
    seen: List[float] = []
    assert bridge.call("demo/sleep", ms=100, on_progress=lambda done, total, message: seen.append(done)) == {"sleptMs": 100}
    assert seen and seen == sorted(seen)


def test_events_are_published_in_sequence(bridge: gabp.Bridge) -> None:
    events = bridge.subscribe("world/changed")
    for x in range(3):
        bridge.call("world/set_block", x=x, y=0, block="air")
    got = [events.next(timeout=5) for _ in range(3)]
    assert [e.payload["x"] for e in got if e] == [0, 1, 2]
    assert [e.seq for e in got if e] == sorted(e.seq for e in got if e)


def test_time_control_pauses_and_steps_the_loop(farm: Farm, bridge: gabp.Bridge) -> None:
    bridge.request("time/pause")
    paused = farm.ticks
    time.sleep(0.1)
    assert farm.ticks == paused
    bridge.request("time/step", {"ticks": 3})
    assert farm.ticks == paused + 3
    time.sleep(0.1)
    assert farm.ticks == paused + 3
    bridge.request("time/resume")
    time.sleep(0.1)
    assert farm.ticks > paused + 3


def test_building_after_serving_and_ticking_without_time_control_are_state_errors(farm: Farm) -> None:
    with pytest.raises(gabp.StateError, match="before serve"):
        farm.mod.add_tool("late/tool", lambda: None)
    with pytest.raises(gabp.StateError):
        farm.mod.serve()
    plain = gabp.Mod("plain", "1.0")
    with pytest.raises(gabp.StateError, match="time control"):
        plain.tick()


def test_bad_tool_definitions_are_refused_naming_the_tool() -> None:
    mod = gabp.Mod("bad", "1.0")

    def takes_a_thing(thing: Thing) -> None:
        pass

    with pytest.raises(gabp.InvalidArgument, match="tool x/thing: parameter thing"):
        mod.add_tool("x/thing", takes_a_thing)
    with pytest.raises(gabp.InvalidArgument, match="not callable"):
        mod.add_tool("x/y", 3, input_schema={"type": "object"})  # type: ignore[arg-type]
    with pytest.raises(gabp.InvalidArgument):
        gabp.Mod("", "1.0")
    mod.add_tool("Not A Name", lambda: None)
    with pytest.raises(gabp.InvalidArgument, match="Not A Name"):
        mod.serve("tcp://127.0.0.1:0", TOKEN)


def test_serving_without_settings_announces_itself_in_bridge_json(home: Path) -> None:
    mod = gabp.Mod("announced", "1.0")
    mod.add_tool("demo/echo", lambda value=None: {"value": value})
    endpoint = mod.serve()
    path = home / "config" / "gabp" / "bridge.json"
    try:
        assert path.exists(), list(home.rglob("*"))
        announced = json.loads(path.read_text())["transport"]
        assert endpoint.endswith(":" + announced["address"])
        with gabp.Bridge.connect() as bridge:
            assert bridge.call("demo/echo", value=2) == {"value": 2}
    finally:
        mod.stop()
    assert not path.exists()


def test_gabp_conformance_passes_against_a_python_mod(farm: Farm) -> None:
    assert farm.mod.endpoint is not None
    ran = subprocess.run(
        [gabp_bin(), "conformance", "--connect", farm.mod.endpoint, "--fast-tool", "demo/echo",
         "--slow-tool", "demo/sleep", "--slow-args", '{"ms": 1500}',
         "--event-tool", "player/teleport", "--event-channel", "player/move",
         "--event-args", '{"x": 1, "y": 2, "z": 3}', "--event-args", '{"x": 2, "y": 2, "z": 3}'],
        env={"GABP_TOKEN": TOKEN, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert " 0 failed" in ran.stdout
