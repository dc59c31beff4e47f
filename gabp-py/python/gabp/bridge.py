"""The bridge side: connect to a running mod, call its tools, read its events, resources and state."""

from __future__ import annotations

import base64
import os
from typing import Any, Callable, Dict, List, Optional, Union

from . import _gabp
from ._gabp import Event, Subscription

__all__ = ["Bridge", "Event", "Subscription", "ProgressCallback"]

#: Called with ``(progress, total, message)`` as a tool reports progress (SPEC/1.0 extensions.md §progress).
ProgressCallback = Callable[[float, Optional[float], Optional[str]], Any]

PathLike = Union[str, "os.PathLike[str]"]


def resource_content(read: Dict[str, Any]) -> Union[str, bytes, Any]:
    """The content of a ``resources/read`` result: ``bytes`` for base64, else as the mod sent it."""
    content = read.get("content")
    if read.get("encoding") == "base64" and isinstance(content, str):
        return base64.b64decode(content)
    return content


class Bridge:
    """A connection to one mod.

    >>> with gabp.Bridge.connect() as game:          # the GABS environment, else bridge.json
    ...     game.call("world/get_block", x=0, y=64, z=0)

    Every method blocks without holding the interpreter, and Ctrl-C interrupts it (a tool call is then
    cancelled in the mod). The connection is read and written on the thread that waits on it: events the mod
    sends while no thread waits are read at the next call, ``next()`` or ``connected``. Errors are
    :mod:`gabp.errors` exceptions.
    """

    __slots__ = ("_inner",)

    def __init__(self, inner: _gabp.Bridge) -> None:
        self._inner = inner

    @classmethod
    def connect(
        cls,
        endpoint: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout: Optional[float] = None,
        bridge_json: Optional[PathLike] = None,
    ) -> "Bridge":
        """Connects and completes the handshake.

        ``endpoint`` (``tcp://127.0.0.1:PORT``, ``unix:///path``, ``ws://...``) and ``token`` when given; what
        is missing comes from the GABS environment (``GABP_SERVER_PORT``, ``GABP_TOKEN``), then from
        ``bridge.json`` (``bridge_json``, else the platform's path). ``timeout`` is the default time limit of
        each call, in seconds.
        """
        path = os.fspath(bridge_json) if bridge_json is not None else None
        return cls(_gabp.Bridge.connect(endpoint, token, timeout=timeout, bridge_json=path))

    @property
    def welcome(self) -> Dict[str, Any]:
        """The mod's ``session/welcome``: ``app``, ``capabilities``, ``methods``, ..."""
        return self._inner.welcome

    @property
    def connected(self) -> bool:
        return self._inner.connected

    def tools(self) -> List[Dict[str, Any]]:
        """The mod's tools (``tools/list``): ``name``, ``description``, ``inputSchema``, ..."""
        return self._inner.tools()

    def call(
        self,
        name: str,
        args: Optional[Dict[str, Any]] = None,
        /,
        *,
        timeout: Optional[float] = None,
        on_progress: Optional[ProgressCallback] = None,
        **kwargs: Any,
    ) -> Any:
        """Calls tool ``name`` with ``args`` and keyword arguments, and returns its result.

        ``timeout`` limits the wait (seconds); ``on_progress`` is called as the tool reports progress. A tool
        argument named ``timeout`` or ``on_progress`` goes in ``args``.
        """
        return self._inner.call(name, args, timeout=timeout, on_progress=on_progress, **kwargs)

    def request(self, method: str, params: Optional[Dict[str, Any]] = None, *, timeout: Optional[float] = None) -> Any:
        """Sends any request (``state/get``, an extension's method) and returns its result."""
        return self._inner.request(method, params, timeout=timeout)

    def subscribe(self, *channels: str) -> Subscription:
        """Subscribes to channels (or glob patterns, where the mod offers ``channel-patterns``).

        >>> for event in game.subscribe("player/*"):
        ...     print(event.channel, event.seq, event.payload)
        """
        return self._inner.subscribe(*channels)

    def resources(self) -> List[Dict[str, Any]]:
        """The mod's resources (``resources/list``): ``uri``, ``name``, ``mimeType``, ..."""
        listed = self.request("resources/list")
        return list(listed.get("resources", []))

    def read_resource(self, uri: str) -> Union[str, bytes, Any]:
        """Reads resource ``uri``: ``str`` for text, ``bytes`` for binary content."""
        return resource_content(self.request("resources/read", {"uri": uri}))

    def get_state(self, components: Optional[List[str]] = None, **params: Any) -> Dict[str, Any]:
        """The game state (``state/get``), optionally only ``components``."""
        if components is not None:
            params["components"] = components
        state: Dict[str, Any] = self.request("state/get", params)
        return state

    def set_state(self, updates: Dict[str, Any], **params: Any) -> Dict[str, Any]:
        """Applies state ``updates`` (``state/set``)."""
        applied: Dict[str, Any] = self.request("state/set", {"updates": updates, **params})
        return applied

    def attention(self) -> Optional[Dict[str, Any]]:
        """The open attention item (``attention/current``), or ``None``."""
        attention: Optional[Dict[str, Any]] = self.request("attention/current").get("attention")
        return attention

    def ack_attention(self, attention_id: str) -> Dict[str, Any]:
        """Acknowledges attention item ``attention_id`` (``attention/ack``)."""
        acked: Dict[str, Any] = self.request("attention/ack", {"attentionId": attention_id})
        return acked

    def ping(self) -> Dict[str, Any]:
        """``session/ping``."""
        pong: Dict[str, Any] = self.request("session/ping")
        return pong

    def close(self) -> None:
        """Says goodbye and closes the connection."""
        self._inner.close()

    def __enter__(self) -> "Bridge":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        app = self.welcome.get("app", {})
        return f"<gabp.Bridge to {app.get('name')} {app.get('version')}>"
