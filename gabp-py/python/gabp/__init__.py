"""GABP, the Game Agent Bridge Protocol, for Python: drive a running game, or make a game a mod.

- :class:`Bridge` connects to a mod (:mod:`gabp.aio` for asyncio): tools, events, resources, state.
- :class:`Mod` serves GABP from a Python program, with tools as decorated functions.
- :mod:`gabp.gym` is a Gymnasium environment over any mod offering the ``env`` extension.

Errors are the exceptions of :mod:`gabp.errors`, re-exported here.
"""

from ._gabp import ToolCall, __version__
from .bridge import Bridge, Event, Subscription
from . import errors
from .errors import *  # noqa: F403 (the exception classes, listed in errors.__all__)
from .mod import Mod

__all__ = [
    "__version__",
    "Bridge",
    "Event",
    "Subscription",
    "Mod",
    "ToolCall",
    *errors.__all__,
]
