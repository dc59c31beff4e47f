"""The bridge against the demo game served by `gabp mod`: connecting three ways, tools, events, resources,
state, attention, progress."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

import gabp
from conftest import TOKEN, DemoMod, start_demo, stop_demo


def test_connect_with_endpoint_and_token(demo: DemoMod) -> None:
    with gabp.Bridge.connect(demo.endpoint, TOKEN) as game:
        assert game.connected
        assert game.welcome["app"]["name"]
        assert "demo/echo" in {t["name"] for t in game.tools()}
    assert not game.connected


def test_connect_from_the_gabs_environment(demo: DemoMod, monkeypatch: pytest.MonkeyPatch) -> None:
    port = demo.endpoint.rsplit(":", 1)[1]
    monkeypatch.setenv("GABP_SERVER_PORT", port)
    monkeypatch.setenv("GABP_TOKEN", TOKEN)
    with gabp.Bridge.connect() as game:
        assert game.call("demo/echo", value="env") == {"value": "env"}


def test_connect_through_the_bridge_json_the_mod_wrote(home: Path, tmp_path: Path) -> None:
    demo = start_demo(token=False)
    try:
        path = home / "config" / "gabp" / "bridge.json"
        assert json.loads(path.read_text())["transport"]["type"] == "tcp"
        with gabp.Bridge.connect() as game:
            assert game.call("demo/echo", value="found") == {"value": "found"}
        copy = tmp_path / "elsewhere.json"
        copy.write_bytes(path.read_bytes())
        copy.chmod(0o600)
        with gabp.Bridge.connect(bridge_json=copy) as game:
            assert game.call("demo/echo", value="file") == {"value": "file"}
    finally:
        stop_demo(demo)


def test_connect_with_nothing_to_go_on_names_the_sources() -> None:
    with pytest.raises(gabp.InvalidArgument) as raised:
        gabp.Bridge.connect()
    message = str(raised.value)
    assert "GABP_SERVER_PORT" in message and "bridge.json" in message


def test_call_with_keywords_or_a_dict(game: gabp.Bridge) -> None:
    assert game.call("demo/echo", value="kw") == {"value": "kw"}
    assert game.call("demo/echo", {"value": "dict"}) == {"value": "dict"}
    assert game.call("demo/echo", {"value": "both"}, timeout=5.0) == {"value": "both"}
    block = game.call("world/get_block", x=0, y=0, z=0)
    assert isinstance(block, dict)


def test_unicode_and_large_payloads_round_trip(game: gabp.Bridge) -> None:
    text = "ünïcødé ✓ " * 5000
    assert game.call("demo/echo", value=text) == {"value": text}


def test_progress_reaches_the_callback_before_the_result(game: gabp.Bridge) -> None:
    seen: List[Tuple[float, Optional[float], Optional[str]]] = []
    result = game.call("demo/sleep", ms=300, on_progress=lambda done, total, message: seen.append((done, total, message)))
    assert result["sleptMs"] >= 300
    assert seen, "demo/sleep reports progress"
    assert [p[0] for p in seen] == sorted(p[0] for p in seen)


def test_an_exception_in_the_progress_callback_ends_the_call(game: gabp.Bridge) -> None:
    def fail(done: float, total: Optional[float], message: Optional[str]) -> None:
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        game.call("demo/sleep", ms=2000, on_progress=fail)
    assert game.call("demo/echo", value="still up") == {"value": "still up"}


def test_events_arrive_in_sequence(game: gabp.Bridge) -> None:
    events = game.subscribe("world/block_change")
    assert events.channels == ["world/block_change"]
    for x in range(3):
        game.call("world/place_block", x=x, y=5, z=1, blockType="stone")
    seqs = []
    for _ in range(3):
        event = events.next(timeout=5)
        assert event is not None and event.kind == "event"
        assert event.channel == "world/block_change"
        seqs.append(event.seq)
        assert event.payload["block"] == "stone"
    assert seqs == sorted(seqs) and len(set(seqs)) == 3
    assert events.next(timeout=0.2) is None
    events.close()
    assert events.next(timeout=0.2) is None


def test_one_thread_iterates_events_while_another_calls(game: gabp.Bridge) -> None:
    # The connection runs on whichever thread waits on it; two waiting at once share it.
    events = game.subscribe("world/block_change")
    seen: List[int] = []

    def listen() -> None:
        while len(seen) < 20:
            event = events.next(timeout=10)
            if event is None:
                return
            seen.append(event.seq)

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    for i in range(20):
        assert game.call("world/place_block", x=i % 16, y=6, z=2 + i // 16, blockType="dirt")["success"] is True
    listener.join(10)
    assert not listener.is_alive(), f"the listener saw {len(seen)} of 20 events"
    assert seen == sorted(seen) and len(set(seen)) == 20
    events.close()


def test_connected_turns_false_when_the_mod_goes() -> None:
    # Nothing reads a blocking bridge's connection while no thread waits on it: the getter reads what came.
    demo = start_demo()
    try:
        game = gabp.Bridge.connect(demo.endpoint, TOKEN)
        assert game.connected
    finally:
        stop_demo(demo)
    deadline = time.monotonic() + 5
    while game.connected and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not game.connected


def test_a_blocking_bridge_refuses_to_be_awaited(demo: DemoMod) -> None:
    from gabp import _gabp

    inner = _gabp.Bridge.connect(demo.endpoint, TOKEN)
    completions = _gabp.Completions()
    with pytest.raises(gabp.StateError, match="gabp.aio"):
        inner.call_async(completions, "demo/echo", {"value": "x"})
    with pytest.raises(gabp.StateError, match="gabp.aio"):
        inner.request_async(completions, "session/ping")
    with pytest.raises(gabp.StateError, match="gabp.aio"):
        inner.close_async()
    with pytest.raises(gabp.StateError, match="with for"):
        inner.subscribe("world/block_change").next_async()
    assert inner.call("demo/echo", {"value": "still"}) == {"value": "still"}
    inner.close()


def test_a_pattern_subscribes_to_every_matching_channel(game: gabp.Bridge) -> None:
    events = game.subscribe("player/*")
    assert events.channels == ["player/move"]
    game.call("player/teleport", x=3, y=8, z=3)
    event = next(iter(events))
    assert event.channel == "player/move"


def test_subscribing_to_a_channel_the_mod_lacks_is_refused(game: gabp.Bridge) -> None:
    with pytest.raises(gabp.InvalidArgument, match="no/such"):
        game.subscribe("no/such")


def test_resources_text_and_binary(game: gabp.Bridge) -> None:
    uris = {r["uri"] for r in game.resources()}
    assert {"gabp://game/world", "gabp://mod/info"} <= uris
    world = game.read_resource("gabp://game/world")
    assert isinstance(world, str) and json.loads(world)
    info = game.read_resource("gabp://mod/info")
    assert isinstance(info, bytes) and json.loads(info)
    with pytest.raises(gabp.ResourceNotFound) as raised:
        game.read_resource("gabp://game/nothing")
    assert raised.value.code == -32300


def test_attention_opens_blocks_and_is_acknowledged(game: gabp.Bridge) -> None:
    assert game.attention() is None
    opened = game.call("demo/raise_error", message="the world is on fire")
    attention = game.attention()
    assert attention is not None and attention["attentionId"] == opened["attentionId"]
    assert game.call("demo/status")["toolCalls"] >= 1
    acked = game.ack_attention(opened["attentionId"])
    assert acked["acknowledged"] is True
    assert game.attention() is None


def test_ping_and_a_raw_request(game: gabp.Bridge) -> None:
    assert isinstance(game.ping(), dict)
    assert game.request("tools/list")["tools"]


def test_state_is_read_and_set(game: gabp.Bridge) -> None:
    state = game.get_state()
    assert "player" in json.dumps(state)
    game.set_state({"player": {"position": {"x": 4, "y": 9, "z": 4}}})
    assert game.get_state()["state"]["player"]["position"] == {"x": 4, "y": 9, "z": 4}
