"""A running Fable, assembled: the kernel's runtime (:class:`fable_core.tools.runtime.Runtime`)
with what every capability installs when it opens, and the credentials every surface checks.

Every surface starts one ``Fable`` and shares it; tests open one per test database. What the
capabilities install (:mod:`fable_core.capabilities`) is held as parts under keys their domains
declare, and read here through typed properties for the surfaces: ``llm`` (the model provider),
``model_gate`` (each user's share of it), ``embedder`` (query embeddings for search) and
``assistant`` (chat, background workers); each is None when the capability is not configured
(``LLM_PROVIDER=none``), and every non-LLM tool works without them. Domains never import this
frame: they take the kernel's :class:`~fable_core.tools.runtime.Runtime`. A Fable opened with
``jobs=True`` (``fable serve``) also runs the background jobs (see :mod:`fable_core.tools.jobs`).
"""

from __future__ import annotations

import gc
import logging
from typing import TYPE_CHECKING, Self

from fable_core.admin.mailer import MAILER, Mailer
from fable_core.config import Settings, load_settings
from fable_core.db.database import Database
from fable_core.identity.key_callers import KEY_CALLERS, KeyCallers
from fable_core.identity.revocations import Revocations
from fable_core.tools.registry import REGISTRY, Registry
from fable_core.tools.runtime import Closer, Runtime

if TYPE_CHECKING:
    from fable_core.assistant.gate import ModelGate
    from fable_core.assistant.providers.base import Provider
    from fable_core.assistant.service import Assistant
    from fable_core.knowledge.vectors import QueryEmbedder
    from fable_core.tools.jobs import Scheduler

__all__ = ["Fable"]


class Fable(Runtime):
    """The core, assembled. Use ``async with await Fable.open(settings) as fable:`` or close()."""

    def __init__(self, settings: Settings, db: Database, registry: Registry = REGISTRY, *,
                 jobs: bool = False) -> None:
        super().__init__(settings, db, registry, jobs=jobs)
        self.revocations = Revocations.of(db)  # credentials revoked by any process, heard here
        self.install(KEY_CALLERS, KeyCallers(db, settings, self.revocations))
        self.install(MAILER, Mailer(db, settings))  # account mail and an admin's test mail, for every surface
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

    @property
    def keys(self) -> KeyCallers:
        return self.required(KEY_CALLERS)

    @property
    def mailer(self) -> Mailer:
        return self.required(MAILER)

    @property
    def llm(self) -> Provider | None:
        from fable_core.assistant.parts import LLM

        return self.part(LLM)

    @property
    def model_gate(self) -> ModelGate | None:
        from fable_core.assistant.parts import MODEL_GATE

        return self.part(MODEL_GATE)

    @property
    def embedder(self) -> QueryEmbedder | None:
        from fable_core.knowledge.vectors import EMBEDDER

        return self.part(EMBEDDER)

    @property
    def assistant(self) -> Assistant | None:
        from fable_core.assistant.parts import ASSISTANT

        return self.part(ASSISTANT)

    @property
    def jobs(self) -> Scheduler | None:
        from fable_core.tools.jobs import SCHEDULER

        return self.part(SCHEDULER)

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
