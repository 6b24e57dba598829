"""Which optional services answer right now: the tools that need one are offered only while it does.

A tool declares what it needs beyond the database (``@tool(needs=("llm",))``). Listing a tool a
client cannot use costs every conversation its schema and invites a call that can only fail, so
surfaces list a tool only while its needs are met (:meth:`Registry.for_caller`) and tell clients
when that changes (MCP's ``notifications/tools/list_changed``). Calling a hidden tool is still
answered by the tool itself, with its own clear error: availability is a hint that can be a few
seconds stale, never an authorisation.

The capability that owns a service keeps its flag true or false (the assistant's
:class:`~fable_core.assistant.status.ProviderStatus` for ``"llm"``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

__all__ = ["Availability", "Listener"]

_log = logging.getLogger(__name__)
Listener = Callable[[], None]


class Availability:
    """The set of services that answer now, and who to tell when it changes."""

    def __init__(self, up: Iterable[str] = ()) -> None:
        self._up = set(up)
        self._listeners: dict[object, Listener] = {}

    def __contains__(self, service: object) -> bool:
        return service in self._up

    def meets(self, needs: Iterable[str]) -> bool:
        return all(need in self._up for need in needs)

    def set(self, service: str, up: bool) -> None:
        """Record whether ``service`` answers; listeners hear of a change, not of a repeat."""
        if (service in self._up) == up:
            return
        if up:
            self._up.add(service)
        else:
            self._up.discard(service)
        _log.info("%s is %s", service, "available" if up else "unavailable")
        for listener in list(self._listeners.values()):
            try:
                listener()
            except Exception:  # noqa: BLE001 - one failing listener must not stop the others
                _log.exception("availability listener %r failed", listener)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` (synchronously, it must not block) on every change; returns the
        function that stops it."""
        token = object()
        self._listeners[token] = listener
        return lambda: self._listeners.pop(token, None) and None
