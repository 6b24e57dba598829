"""A running Fable: settings, database and dispatcher, opened and closed together.

Every surface starts one ``Fable`` and shares it; tests open one per test database. What the
capabilities install when it opens (:mod:`fable_core.capabilities`) lands in typed attributes:
``llm`` (the model provider), ``model_gate`` (each user's share of it), ``embedder`` (query
embeddings for search) and ``assistant`` (chat, background workers); each is None when the
capability is not configured (``LLM_PROVIDER=none``), and every non-LLM tool works without them.
A Fable opened with ``jobs=True`` (``fable serve``) also runs the background jobs (``jobs``, see
:mod:`fable_core.infra.jobs`).
"""

from __future__ import annotations

import gc
import logging
from typing import TYPE_CHECKING, Any, Self

from fable_core.admin.mailer import Mailer
from fable_core.capabilities import Closer
from fable_core.config import Settings, load_settings
from fable_core.db.database import Database
from fable_core.identity.key_callers import KeyCallers
from fable_core.identity.revocations import Revocations
from fable_core.infra.changes import ChangeFeed
from fable_core.infra.events import EventBus
from fable_core.infra.loopwatch import LoopWatch
from fable_core.tools.availability import Availability
from fable_core.tools.caller import Caller
from fable_core.tools.dispatcher import Dispatcher
from fable_core.tools.registry import REGISTRY, Registry

if TYPE_CHECKING:
    from fable_core.assistant.gate import ModelGate
    from fable_core.assistant.providers.base import Provider
    from fable_core.assistant.service import Assistant
    from fable_core.infra.jobs import Scheduler
    from fable_core.knowledge.vectors import QueryEmbedder

__all__ = ["Fable"]


class Fable:
    """The core, assembled. Use ``async with await Fable.open(settings) as fable:`` or close()."""

    def __init__(self, settings: Settings, db: Database, registry: Registry = REGISTRY, *,
                 jobs: bool = False) -> None:
        self.settings = settings
        self.db = db
        self.registry = registry
        self.events = EventBus()
        self.changes = ChangeFeed(db, self.events)  # the same events, to and from other processes
        self.revocations = Revocations.of(db)  # credentials revoked by any process, heard here
        self.keys = KeyCallers(db, settings, self.revocations)
        self.mailer = Mailer(db, settings)  # account mail and an admin's test mail, for every surface
        self.availability = Availability()  # optional services answering now (tools' ``needs``)
        self.dispatcher = Dispatcher(db, settings, registry=registry, events=self.events, runtime=self)
        self.llm: Provider | None = None
        self.model_gate: ModelGate | None = None
        self.embedder: QueryEmbedder | None = None
        self.assistant: Assistant | None = None
        self.runs_jobs = jobs  # whether this process runs the background jobs
        self.jobs: Scheduler | None = None
        self.loop_watch = LoopWatch()  # how late the event loop runs (/api/health)
        self._closers: list[Closer] = []

    @classmethod
    async def open(cls, settings: Settings | None = None, *, migrate: bool = True, jobs: bool = False) -> Fable:
        from fable_core.capabilities import install_capabilities, load_capabilities

        load_capabilities()
        settings = settings or load_settings()
        logging.getLogger("fable_core").setLevel(settings.fable_log_level.upper())
        db = await Database.open(settings, migrate=migrate)
        fable = cls(settings, db, jobs=jobs)
        fable._closers = await install_capabilities(fable)
        fable.loop_watch.start()
        # What start-up allocated (modules, the registry, schemas: ~280,000 objects) lives as long
        # as the process: out of the collector's sight, a full collection no longer walks it all
        # (~120 ms with the loop stopped, each time the long-lived objects grow by a quarter)
        gc.freeze()
        return fable

    async def call(self, name: str, arguments: dict[str, Any] | None, caller: Caller) -> dict[str, Any]:
        return await self.dispatcher.call(name, arguments, caller)

    async def close(self) -> None:
        await self.loop_watch.stop()
        await self.mailer.close()
        for closer in reversed(self._closers):
            await closer()
        self._closers = []
        await self.dispatcher.usage.close()
        await self.revocations.close()
        await self.changes.close()
        await self.db.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
