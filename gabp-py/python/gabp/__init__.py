"""GABP, the Game Agent Bridge Protocol, for Python: drive a running game, or make a game a mod.

- :class:`Bridge` connects to a mod (:mod:`gabp.aio` for asyncio): tools, events, resources, state.
- :class:`Mod` serves GABP from a Python program, with tools as decorated functions.
- :mod:`gabp.gym` is a Gymnasium environment over any mod offering the ``env`` extension.

Errors are the exceptions of :mod:`gabp.errors`, re-exported here.
"""

from ._gabp import ToolCall, __version__
from .bridge import Bridge, Event, Subscription
from .errors import (
    AuthenticationFailed,
    Disconnected,
    GabpError,
    InvalidArgument,
    InvalidParams,
    MethodNotFound,
    NotAuthenticated,
    NotSupported,
    ProtocolError,
    RemoteError,
    ResourceNotFound,
    StateError,
    Timeout,
    ToolFailed,
    ToolNotFound,
    ToolTimeout,
    ToolUnavailable,
)
from .mod import Mod

__all__ = [
    "__version__",
    "Bridge",
    "Event",
    "Subscription",
    "Mod",
    "ToolCall",
    "GabpError",
    "RemoteError",
    "AuthenticationFailed",
    "NotAuthenticated",
    "MethodNotFound",
    "InvalidParams",
    "ToolNotFound",
    "ToolUnavailable",
    "ToolFailed",
    "ToolTimeout",
    "ResourceNotFound",
    "Timeout",
    "Disconnected",
    "ProtocolError",
    "NotSupported",
    "InvalidArgument",
    "StateError",
]
