"""The exceptions of gabp: each carries the GABP error ``code``, ``message`` and ``data`` (SPEC/1.0 gabp.md §8).

A mod's own errors are :class:`RemoteError` and its subclasses, one per registry code; what goes wrong on this
side is :class:`Timeout`, :class:`Disconnected`, :class:`ProtocolError`, :class:`NotSupported`,
:class:`InvalidArgument` or :class:`StateError`. Raise a :class:`RemoteError` subclass from a mod's tool to
answer with its code: ``raise gabp.InvalidParams("x must be positive")`` is a -32602.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

__all__ = [
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


class GabpError(Exception):
    """Any error of gabp."""

    #: The code a mod answers with when a tool raises this class without one.
    default_code: Optional[int] = None

    def __init__(self, message: str, code: Optional[int] = None, data: Any = None) -> None:
        super().__init__(message)
        self.message: str = message
        self.code: Optional[int] = code if code is not None else self.default_code
        self.data: Any = data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code!r})"


class RemoteError(GabpError):
    """The mod answered with an error; ``code`` is its code."""


class AuthenticationFailed(RemoteError):
    """The mod refused the token (-32101)."""

    default_code = -32101


class NotAuthenticated(RemoteError):
    """The session is not established (-32100)."""

    default_code = -32100


class MethodNotFound(RemoteError):
    """The mod does not know the method (-32601)."""

    default_code = -32601


class InvalidParams(RemoteError):
    """The params, or a tool's arguments, failed their schema (-32602).

    ``errors`` lists each failure the mod named (``{"path": "/arguments/x", "message": ...}``); ``field`` is
    the path of the first.
    """

    default_code = -32602

    @property
    def errors(self) -> List[Dict[str, Any]]:
        if isinstance(self.data, dict) and isinstance(self.data.get("errors"), list):
            return [e for e in self.data["errors"] if isinstance(e, dict)]
        return []

    @property
    def field(self) -> Optional[str]:
        for error in self.errors:
            path = error.get("path")
            if isinstance(path, str):
                return path
        return None


class ToolNotFound(RemoteError):
    """The mod has no such tool (-32400)."""

    default_code = -32400


class ToolUnavailable(RemoteError):
    """The tool cannot run now, blocked by attention, say (-32401)."""

    default_code = -32401


class ToolFailed(RemoteError):
    """The tool ran and failed (-32402)."""

    default_code = -32402


class ToolTimeout(RemoteError):
    """The tool took longer than the mod allows (-32403)."""

    default_code = -32403


class ResourceNotFound(RemoteError):
    """The mod has no such resource (-32300)."""

    default_code = -32300


class Timeout(GabpError, TimeoutError):
    """No answer within the call's time limit; the call may still run in the mod."""


class Disconnected(GabpError, ConnectionError):
    """The connection is gone, was closed, or could not be made."""


class ProtocolError(GabpError):
    """The mod broke the protocol (framing, an answer that is not valid)."""


class NotSupported(GabpError):
    """The mod does not offer what was asked (a method its welcome does not list); nothing was sent."""


class InvalidArgument(GabpError, ValueError):
    """A value handed to gabp itself is not valid: an endpoint, a token, a name, arguments that are not JSON."""


class StateError(GabpError, RuntimeError):
    """The object cannot do this now: a mod that is already serving, time control that is off."""
