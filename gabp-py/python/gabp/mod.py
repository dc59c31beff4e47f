"""The mod side: a Python program (a game, a test double) serves GABP.

>>> game = gabp.Mod("sheep-farm", "1.0.0")
>>> @game.tool("world/get_block", read_only=True)
... def get_block(x: int, y: int, z: int) -> dict:
...     return {"block": world[x, y, z]}
>>> game.serve()                 # the GABS environment, else a free port announced in bridge.json
>>> while running:               # the game's loop
...     game.pump()              # main-thread tools run here
"""

from __future__ import annotations

import enum
import functools
import inspect
import os
from typing import Any, Callable, Dict, Optional, TypeVar

from . import _gabp
from .bridge import PathLike
from .errors import InvalidArgument
from .schema import call_parameter, enum_parameters
from .schema import input_schema as schema_from_hints

__all__ = ["Mod"]

F = TypeVar("F", bound=Callable[..., Any])


def with_enum_members(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``function``, handed the members of the enums its parameters are annotated with instead of their values."""
    enums = enum_parameters(function, name)
    if not enums:
        return function

    @functools.wraps(function)
    def with_members(**kwargs: Any) -> Any:
        for parameter, kind in enums.items():
            if parameter in kwargs:
                kwargs[parameter] = kind(kwargs[parameter])
        result = function(**kwargs)
        return result.value if isinstance(result, enum.Enum) else result

    return with_members


class Mod:
    """A mod named ``app`` at ``version``: add tools and channels, then :meth:`serve`.

    Tools are plain functions called with their arguments as keywords; their return value (JSON-able) is the
    result, and an exception is the error (a :class:`gabp.errors.RemoteError` keeps its code, anything else is
    -32402). A tool runs on a worker thread, or with ``main_thread=True`` on the game's thread inside
    :meth:`pump`, so that it may touch the game's world without locks.
    """

    __slots__ = ("_inner", "app")

    def __init__(self, app: str, version: str) -> None:
        self._inner = _gabp.Mod(app, version)
        self.app = app

    def tool(
        self,
        name: str,
        *,
        description: Optional[str] = None,
        input_schema: Optional[Dict[str, Any]] = None,
        read_only: bool = False,
        main_thread: bool = False,
        timeout: Optional[float] = None,
    ) -> Callable[[F], F]:
        """Decorates a function as tool ``name``; see :meth:`add_tool`."""

        def register(function: F) -> F:
            self.add_tool(
                name,
                function,
                description=description,
                input_schema=input_schema,
                read_only=read_only,
                main_thread=main_thread,
                timeout=timeout,
            )
            return function

        return register

    def add_tool(
        self,
        name: str,
        function: Callable[..., Any],
        *,
        description: Optional[str] = None,
        input_schema: Optional[Dict[str, Any]] = None,
        read_only: bool = False,
        main_thread: bool = False,
        timeout: Optional[float] = None,
    ) -> None:
        """Adds tool ``name`` served by ``function``.

        ``input_schema`` (a JSON Schema) checks the arguments before the function sees them; without it, the
        schema comes from the function's type hints (``int``, ``float``, ``str``, ``bool``, lists, dicts,
        ``Optional``, ``Literal``, enums, TypedDicts). ``description`` defaults to the docstring's first
        paragraph. ``read_only`` tags it so (it answers while attention blocks); ``main_thread`` runs it in
        :meth:`pump`; ``timeout`` (seconds) is the longest a call may take, or wait for the pump, before it is
        answered -32403. A parameter annotated :class:`gabp.ToolCall` gets the call itself (``call.cancelled``,
        ``call.progress(done, total, message)``) instead of an argument.
        """
        if not callable(function):
            raise InvalidArgument(f"tool {name}: the function is not callable")
        if input_schema is None:
            input_schema = schema_from_hints(function, name)
            function = with_enum_members(function, name)
        if description is None:
            doc = inspect.getdoc(function)
            description = doc.split("\n\n")[0].strip() if doc else None
        self._inner.add_tool(
            name,
            function,
            input_schema=input_schema,
            description=description,
            read_only=read_only,
            main_thread=main_thread,
            call_parameter=call_parameter(function, name),
            timeout=timeout,
        )

    def channel(self, name: str) -> None:
        """Adds event channel ``name``, for :meth:`publish`."""
        self._inner.add_channel(name)

    def enable_time_control(self) -> None:
        """Offers the time-control extension: bridges pause, resume and step; ask :meth:`tick` each tick."""
        self._inner.enable_time_control()

    def serve(
        self,
        endpoint: Optional[str] = None,
        token: Optional[str] = None,
        *,
        bridge_json: Optional[PathLike] = None,
    ) -> str:
        """Starts serving in the background and returns the endpoint (with its real port).

        Where: ``endpoint`` and ``token`` when given, else the GABS environment, else a free loopback port and
        a fresh token announced in ``bridge.json`` (removed again by :meth:`stop`).
        """
        path = os.fspath(bridge_json) if bridge_json is not None else None
        return self._inner.serve(endpoint, token, bridge_json=path)

    @property
    def endpoint(self) -> Optional[str]:
        """Where the mod serves, once serving."""
        return self._inner.endpoint

    def publish(self, channel: str, payload: Any = None) -> int:
        """Publishes an event on ``channel`` (``None``: ``{}``); returns its sequence number."""
        return self._inner.publish(channel, payload)

    def pump(self, budget: float = 0.002) -> int:
        """Runs queued main-thread calls for up to ``budget`` seconds; returns how many ran."""
        return self._inner.pump(budget)

    def wait(self, timeout: float) -> bool:
        """Waits up to ``timeout`` seconds for main-thread calls; returns whether some are queued."""
        return self._inner.wait(timeout)

    def wake(self) -> None:
        """Ends a :meth:`wait` in progress."""
        self._inner.wake()

    def tick(self) -> bool:
        """With time control: whether to run the next tick (false while paused, true for steps owed)."""
        return self._inner.tick()

    def run(self) -> None:
        """Serves (if not yet) and runs main-thread calls as they come, until Ctrl-C; then stops.

        For a mod with no game loop of its own.
        """
        if self.endpoint is None:
            self.serve()
        try:
            while True:
                if self.wait(0.5):
                    self.pump(0.05)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def stop(self) -> None:
        """Stops serving: main-thread calls still queued are answered -32401 (the game is shutting down),
        other calls in flight answer (up to 5 s), ``bridge.json`` is removed."""
        self._inner.stop()

    def __enter__(self) -> "Mod":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
