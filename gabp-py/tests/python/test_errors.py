"""Every error class, each from the failure that raises it, carrying the GABP code, message and data."""

from __future__ import annotations

import socket
import threading
import time

import pytest

import gabp
from conftest import TOKEN, DemoMod


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_invalid_params_names_the_field(game: gabp.Bridge) -> None:
    with pytest.raises(gabp.InvalidParams) as raised:
        game.call("world/get_block", x="zero", y=0, z=0)
    error = raised.value
    assert error.code == -32602
    assert error.field is not None and error.field.endswith("/x")
    assert error.errors and all("message" in e for e in error.errors)
    assert isinstance(error, gabp.RemoteError) and isinstance(error, gabp.GabpError)


def test_tool_not_found(game: gabp.Bridge) -> None:
    with pytest.raises(gabp.ToolNotFound) as raised:
        game.call("world/no_such_tool")
    assert raised.value.code == -32400
    assert "world/no_such_tool" in str(raised.value)


def test_a_time_limit_is_a_timeout_and_the_bridge_goes_on(game: gabp.Bridge) -> None:
    started = time.monotonic()
    with pytest.raises(gabp.Timeout) as raised:
        game.call("demo/sleep", ms=5000, timeout=0.2)
    assert time.monotonic() - started < 2
    assert isinstance(raised.value, TimeoutError) and raised.value.code is None
    assert game.call("demo/echo", value=1) == {"value": 1}


def test_a_time_limit_set_at_connect_applies_to_every_call(demo: DemoMod) -> None:
    with demo.connect(timeout=0.2) as game:
        with pytest.raises(gabp.Timeout):
            game.call("demo/sleep", ms=5000)


def test_nobody_listening_is_disconnected() -> None:
    with pytest.raises(gabp.Disconnected) as raised:
        gabp.Bridge.connect(f"tcp://127.0.0.1:{free_port()}", TOKEN)
    assert isinstance(raised.value, ConnectionError)


def test_a_wrong_token_is_refused_and_never_echoed(demo: DemoMod) -> None:
    wrong = "f" * 40
    with pytest.raises((gabp.AuthenticationFailed, gabp.Disconnected)) as raised:
        gabp.Bridge.connect(demo.endpoint, wrong)
    assert wrong not in str(raised.value) and TOKEN not in str(raised.value)


def test_a_closed_bridge_is_disconnected(demo: DemoMod) -> None:
    game = demo.connect()
    game.close()
    with pytest.raises(gabp.Disconnected):
        game.call("demo/echo", value=1)


def test_the_mod_going_away_fails_calls_in_flight(demo: DemoMod) -> None:
    game = demo.connect()
    threading.Timer(0.3, demo.process.kill).start()
    with pytest.raises(gabp.Disconnected):
        game.call("demo/sleep", ms=10000)


@pytest.mark.parametrize(
    "endpoint, token, match",
    [
        ("nonsense://x", TOKEN, "endpoint"),
        ("tcp://127.0.0.1:1", "short", "token"),
    ],
)
def test_invalid_arguments_name_what_is_wrong(endpoint: str, token: str, match: str) -> None:
    with pytest.raises(gabp.InvalidArgument, match=match) as raised:
        gabp.Bridge.connect(endpoint, token)
    assert isinstance(raised.value, ValueError)
    assert token not in str(raised.value) or token == "short" and "short" not in str(raised.value)


def test_arguments_that_are_not_json(game: gabp.Bridge) -> None:
    with pytest.raises(gabp.InvalidArgument, match="demo/echo"):
        game.call("demo/echo", value=object())
    with pytest.raises(gabp.InvalidArgument, match="must be a dict"):
        game.call("demo/echo", [1, 2])  # type: ignore[arg-type]


def test_a_bad_time_limit(game: gabp.Bridge) -> None:
    with pytest.raises(gabp.InvalidArgument, match="timeout"):
        game.call("demo/echo", value=1, timeout=-1)


def test_a_tool_name_that_is_not_valid(game: gabp.Bridge) -> None:
    with pytest.raises(gabp.InvalidArgument, match="Nope"):
        game.call("Nope")


def test_a_method_the_mod_lacks(game: gabp.Bridge) -> None:
    with pytest.raises((gabp.MethodNotFound, gabp.NotSupported)):
        game.request("nosuch/method")
