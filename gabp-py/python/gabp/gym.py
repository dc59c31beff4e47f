"""A Gymnasium environment over any mod that offers the ``env`` extension (SPEC/1.0 extensions.md §env).

>>> import gymnasium, gabp.gym
>>> env = gabp.gym.GameEnv(command=["gabp", "mod"])       # start the demo game, or attach with endpoint=
>>> observation, info = env.reset(seed=42)
>>> observation, reward, terminated, truncated, info = env.step(env.action_space.sample())

Each step runs the game's fixed number of ticks while its time stays paused, so episodes play out the same on a
slow or a fast machine. ``make_vec(n, command)`` starts ``n`` games for a vector environment.

Needs ``gymnasium`` and ``numpy`` (``pip install gabp[gym]``).
"""

from __future__ import annotations

import functools
import os
import secrets
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, SupportsFloat, Tuple, Union

import gymnasium
import numpy as np
from gymnasium import spaces

from .bridge import Bridge
from .errors import Disconnected, NotSupported

__all__ = ["GameEnv", "make_vec", "space_from_json"]

Command = Union[str, Sequence[str]]

_INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _bound(value: Any, dtype: np.dtype[Any], shape: Tuple[int, ...], low: bool) -> np.ndarray[Any, Any]:
    """A Box bound from JSON: ``null`` is no bound (the dtype's extreme for integers, infinity for floats)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        missing: Any = info.min if low else info.max
    else:
        missing = -np.inf if low else np.inf

    def fill(v: Any) -> Any:
        if v is None:
            return missing
        if isinstance(v, list):
            return [fill(x) for x in v]
        return v

    bound: np.ndarray[Any, Any] = np.broadcast_to(np.asarray(fill(value), dtype=dtype), shape).copy()
    return bound


def space_from_json(space: Mapping[str, Any]) -> spaces.Space[Any]:
    """The Gymnasium space a JSON space describes (``{"type": "Box", "low": ..., ...}``)."""
    kind = space.get("type")
    if kind == "Box":
        dtype = np.dtype(space.get("dtype", "float32"))
        shape = tuple(int(n) for n in space["shape"])
        return spaces.Box(
            low=_bound(space["low"], dtype, shape, low=True),
            high=_bound(space["high"], dtype, shape, low=False),
            shape=shape,
            dtype=dtype,
        )
    if kind == "Discrete":
        return spaces.Discrete(int(space["n"]), start=int(space.get("start", 0)))
    if kind == "MultiDiscrete":
        nvec = np.asarray(space["nvec"], dtype=np.int64)
        start = np.asarray(space.get("start", [0] * len(nvec)), dtype=np.int64)
        return spaces.MultiDiscrete(nvec, start=start)
    if kind == "MultiBinary":
        return spaces.MultiBinary(int(space["n"]))
    if kind == "Dict":
        return spaces.Dict({name: space_from_json(inner) for name, inner in space["spaces"].items()})
    raise NotSupported(f"space type {kind!r} is not one of Box, Discrete, MultiDiscrete, MultiBinary, Dict")


def _to_numpy(space: spaces.Space[Any], value: Any) -> Any:
    """An observation from JSON as the space's own values are: arrays of its dtype, numpy integers."""
    if isinstance(space, spaces.Box):
        return np.asarray(value, dtype=space.dtype).reshape(space.shape)
    if isinstance(space, spaces.Discrete):
        return np.int64(value)
    if isinstance(space, (spaces.MultiDiscrete, spaces.MultiBinary)):
        return np.asarray(value, dtype=space.dtype)
    if isinstance(space, spaces.Dict):
        return {name: _to_numpy(inner, value[name]) for name, inner in space.spaces.items()}
    return value


def _to_json(value: Any) -> Any:
    """An action as JSON: arrays as lists, numpy scalars as Python numbers."""
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class GameEnv(gymnasium.Env):
    """A game served by a mod with the ``env`` extension, as a Gymnasium environment.

    Attach to a running mod (``endpoint`` and ``token``, else the GABS environment, else ``bridge.json``), or
    start one with ``command`` (a list of arguments, or one string split as a shell would): it gets its endpoint
    and a fresh token through the GABS environment (``GABP_SERVER_PORT``, ``GABP_TOKEN``) and runs in a process
    group of its own, ended by :meth:`close`. ``timeout`` limits each request, ``startup`` the wait for a
    started game to listen (seconds).
    """

    metadata: Dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        endpoint: Optional[str] = None,
        token: Optional[str] = None,
        command: Optional[Command] = None,
        *,
        timeout: float = 30.0,
        startup: float = 30.0,
    ) -> None:
        super().__init__()
        self._process: Optional["subprocess.Popen[bytes]"] = None
        if command is not None:
            endpoint, token = self._start(command, startup, timeout)
            self._bridge = self._connect_started(endpoint, token, startup, timeout)
        else:
            self._bridge = Bridge.connect(endpoint, token, timeout=timeout)
        extensions = self._bridge.welcome.get("capabilities", {}).get("extensions") or {}
        if "env" not in extensions:
            app = self._bridge.welcome.get("app", {})
            self.close()
            raise NotSupported(
                f"{app.get('name', 'the mod')} does not offer the env extension (SPEC/1.0 extensions.md §env)"
            )
        self.env_info: Dict[str, Any] = dict(extensions["env"])
        described = self._bridge.request("env/spaces")
        self.observation_space = space_from_json(described["observation"])
        self.action_space = space_from_json(described["action"])

    def _start(self, command: Command, startup: float, timeout: float) -> Tuple[str, str]:
        args: List[str] = shlex.split(command) if isinstance(command, str) else list(command)
        port = _free_port()
        token = secrets.token_hex(32)
        self._process = subprocess.Popen(
            args,
            env={**os.environ, "GABP_SERVER_PORT": str(port), "GABP_TOKEN": token},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        return f"tcp://127.0.0.1:{port}", token

    def _connect_started(self, endpoint: str, token: str, startup: float, timeout: float) -> Bridge:
        deadline = time.monotonic() + startup
        while True:
            try:
                return Bridge.connect(endpoint, token, timeout=timeout)
            except Disconnected:
                assert self._process is not None
                code = self._process.poll()
                if code is not None:
                    raise Disconnected(f"the game exited with status {code} before it listened") from None
                if time.monotonic() > deadline:
                    self._stop_process()
                    raise Disconnected(f"the game did not listen on {endpoint} within {startup} s") from None
                time.sleep(0.05)

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
    ) -> Tuple[Any, Dict[str, Any]]:
        super().reset(seed=seed)
        params: Dict[str, Any] = {}
        if seed is not None:
            params["seed"] = int(seed)
        if options:
            params["options"] = options
        started = self._bridge.request("env/reset", params)
        return _to_numpy(self.observation_space, started["observation"]), dict(started.get("info") or {})

    def step(self, action: Any) -> Tuple[Any, SupportsFloat, bool, bool, Dict[str, Any]]:
        stepped = self._bridge.request("env/step", {"action": _to_json(action)})
        return (
            _to_numpy(self.observation_space, stepped["observation"]),
            float(stepped["reward"]),
            bool(stepped["terminated"]),
            bool(stepped["truncated"]),
            dict(stepped.get("info") or {}),
        )

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def close(self) -> None:
        bridge = getattr(self, "_bridge", None)
        if bridge is not None:
            try:
                bridge.close()
            except Disconnected:
                pass
        self._stop_process()
        super().close()


def make_vec(
    n: int, command: Command, *, asynchronous: bool = True, **kwargs: Any
) -> gymnasium.vector.VectorEnv:
    """``n`` games started with ``command``, as one vector environment: Gymnasium's ``AsyncVectorEnv`` (one
    worker process per game; started with ``spawn``, as a forked copy of a process with gabp's threads would
    hang) or, with ``asynchronous=False``, its ``SyncVectorEnv`` in this process."""
    if n < 1:
        raise ValueError(f"make_vec needs at least one game, not {n}")
    make = [functools.partial(GameEnv, command=command, **kwargs) for _ in range(n)]
    if asynchronous:
        return gymnasium.vector.AsyncVectorEnv(make, context="spawn")
    return gymnasium.vector.SyncVectorEnv(make)
