"""The asyncio twin of :class:`gabp.Bridge`: the same methods, awaited.

Cancelling a task that awaits :meth:`Bridge.call` drops the call, and the mod is asked to cancel it
(``tools/cancel``, SPEC/1.0 extensions.md §cancel) when it offers that. Many calls may be in flight at once::

    async with await gabp.aio.Bridge.connect() as game:
        results = await asyncio.gather(*(game.call("demo/echo", text=str(i)) for i in range(64)))
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, AsyncIterator, Dict, List, Optional

from . import _gabp
from .bridge import PathLike, resource_content

__all__ = ["Bridge", "Subscription"]


class Subscription:
    """Events of a subscription, for ``async for``; it ends with the connection or at :meth:`close`."""

    __slots__ = ("_inner",)

    def __init__(self, inner: _gabp.Subscription) -> None:
        self._inner = inner

    @property
    def channels(self) -> List[str]:
        return self._inner.channels

    def __aiter__(self) -> AsyncIterator[_gabp.Event]:
        return self

    async def __anext__(self) -> _gabp.Event:
        event: _gabp.Event = await self._inner.next_async()
        return event

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self._inner.close)


class Bridge:
    """A connection to one mod, for asyncio programs; see :class:`gabp.Bridge` for what each method does.

    It belongs to the event loop it was connected in.
    """

    __slots__ = ("_inner", "_loop", "_completions", "_pending")

    def __init__(self, inner: _gabp.Bridge) -> None:
        self._inner = inner
        self._loop = asyncio.get_running_loop()
        self._completions = _gabp.Completions()
        self._pending: Dict[int, "asyncio.Future[Any]"] = {}
        self._loop.add_reader(self._completions.fileno(), self._answered)

    def _answered(self) -> None:
        for answer_id, ok, value in self._completions.drain():
            future = self._pending.pop(answer_id, None)
            if future is None or future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    async def _answer(self, answer_id: int) -> Any:
        future = self._loop.create_future()
        self._pending[answer_id] = future
        try:
            return await future
        except asyncio.CancelledError:
            self._pending.pop(answer_id, None)
            self._completions.cancel(answer_id)
            raise

    @classmethod
    async def connect(
        cls,
        endpoint: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout: Optional[float] = None,
        bridge_json: Optional[PathLike] = None,
    ) -> "Bridge":
        path = os.fspath(bridge_json) if bridge_json is not None else None
        inner = await asyncio.get_running_loop().run_in_executor(
            None, lambda: _gabp.Bridge.connect(endpoint, token, timeout=timeout, bridge_json=path, asyncio=True)
        )
        return cls(inner)

    @property
    def welcome(self) -> Dict[str, Any]:
        return self._inner.welcome

    @property
    def connected(self) -> bool:
        return self._inner.connected

    async def tools(self) -> List[Dict[str, Any]]:
        listed = await self.request("tools/list")
        return list(listed.get("tools", []))

    async def call(
        self, name: str, args: Optional[Dict[str, Any]] = None, /, *, timeout: Optional[float] = None, **kwargs: Any
    ) -> Any:
        return await self._answer(self._inner.call_async(self._completions, name, args, timeout=timeout, **kwargs))

    async def request(self, method: str, params: Optional[Dict[str, Any]] = None, *, timeout: Optional[float] = None) -> Any:
        return await self._answer(self._inner.request_async(self._completions, method, params, timeout=timeout))

    async def subscribe(self, *channels: str) -> Subscription:
        inner = await asyncio.get_running_loop().run_in_executor(None, lambda: self._inner.subscribe(*channels))
        return Subscription(inner)

    async def resources(self) -> List[Dict[str, Any]]:
        listed = await self.request("resources/list")
        return list(listed.get("resources", []))

    async def read_resource(self, uri: str) -> Any:
        return resource_content(await self.request("resources/read", {"uri": uri}))

    async def get_state(self, components: Optional[List[str]] = None, **params: Any) -> Dict[str, Any]:
        if components is not None:
            params["components"] = components
        result: Dict[str, Any] = await self.request("state/get", params)
        return result

    async def set_state(self, updates: Dict[str, Any], **params: Any) -> Dict[str, Any]:
        result: Dict[str, Any] = await self.request("state/set", {"updates": updates, **params})
        return result

    async def attention(self) -> Optional[Dict[str, Any]]:
        current = await self.request("attention/current")
        attention: Optional[Dict[str, Any]] = current.get("attention")
        return attention

    async def ack_attention(self, attention_id: str) -> Dict[str, Any]:
        result: Dict[str, Any] = await self.request("attention/ack", {"attentionId": attention_id})
        return result

    async def ping(self) -> Dict[str, Any]:
        result: Dict[str, Any] = await self.request("session/ping")
        return result

    async def close(self) -> None:
        await self._inner.close_async()
        self._loop.remove_reader(self._completions.fileno())

    async def __aenter__(self) -> "Bridge":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
