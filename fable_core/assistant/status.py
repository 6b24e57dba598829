"""Is the model server answering: probed in the background, cached for everyone who asks.

``/api/health`` (which every page load calls) and the tool lists (which offer LLM tools only
while a model answers, :mod:`fable_core.tools.availability`) read the last probe instead of asking the
model server each time: a server such as llama.cpp's ends a running answer when another request
arrives, so Fable must not interrupt its own generations to ask how they are doing. For the same
reason no probe is sent while an answer streams; a stream that runs is proof enough.

A server that answers but does not serve the configured chat model is ``model missing`` (the
detail names the models it does serve), and the LLM tools are withdrawn as when it is down; one
that does not serve the embedding model leaves chat alone and turns semantic search off, with
the reason (``Health.semantic_off``) for the UI to say. So does a database whose vector
extension failed its self-test (:mod:`fable_core.db.vectors`), whatever the model server says.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time

from fable_core.assistant.gate import ModelGate
from fable_core.assistant.providers import NoProvider, Provider
from fable_core.assistant.providers.base import URL_SETTING, Health
from fable_core.db.vectors import ON, VectorSupport
from fable_core.tools.availability import Availability

__all__ = ["LLM", "NO_EMBEDDER", "PROBE_EVERY", "PROBE_TIMEOUT", "ProviderStatus"]

LLM = "llm"  # the service name tools declare in ``needs``
PROBE_EVERY = 30.0  # seconds between background probes
PROBE_TIMEOUT = 3.0
FRESH_FOR = 10.0  # a probe younger than this answers /api/health as it is
NO_EMBEDDER = "no embedding model is configured (LLM_PROVIDER is none)"
_log = logging.getLogger(__name__)


class ProviderStatus:
    """The provider's last known health, kept fresh by a background probe."""

    def __init__(self, provider: Provider, availability: Availability, gate: ModelGate, *,
                 every: float = PROBE_EVERY, fresh_for: float = FRESH_FOR, vectors: VectorSupport = ON,
                 embedding: Provider | None = None) -> None:
        self.provider = provider
        self.probe_timeout = PROBE_TIMEOUT
        self.embedding = embedding  # a separate embedding server (EMBED_BASE_URL): asked for itself
        self.vectors = vectors
        self.availability = availability
        self.gate = gate
        self.every = every
        self.fresh_for = fresh_for
        self._last: Health | None = None
        self._checked = 0.0
        self._probing: asyncio.Task[Health] | None = None
        self._loop: asyncio.Task[None] | None = None
        if isinstance(provider, NoProvider):
            self._last = Health("none", "disabled", detail="LLM_PROVIDER is none", semantic_off=NO_EMBEDDER)
        else:  # configured: offered until a probe says otherwise
            availability.set(LLM, True)

    @property
    def last(self) -> Health | None:
        return self._last

    async def current(self) -> Health:
        """The last probe if it is fresh (or an answer is streaming), else a new one."""
        if self._last is not None and (self._last.status == "disabled" or self._busy()
                                       or time.monotonic() - self._checked < self.fresh_for):
            return self._last
        return await self.check()

    async def check(self) -> Health:
        """Probe now (one probe at a time: concurrent askers share it)."""
        if self._last is not None and (self._last.status == "disabled" or self._busy()):
            return self._last
        if self._probing is None or self._probing.done():
            self._probing = asyncio.create_task(self._probe(), name="fable-llm-probe")
        return await asyncio.shield(self._probing)

    async def _probe(self) -> Health:
        try:
            async with asyncio.timeout(self.probe_timeout):
                health = await self.provider.health()
        except TimeoutError:  # it took the connection and did not answer: busy (a CPU server reading a prompt)
            p, last = self.provider, self._last
            health = Health(p.name, "busy", p.model, p.embed_model,
                            detail=f"did not answer the probe within {self.probe_timeout:g} s: busy, not down "
                            "(a server on a CPU reading a long prompt answers nothing else meanwhile)",
                            semantic_off=last.semantic_off if last is not None else "")
        except Exception as e:  # noqa: BLE001 - a probe reports any failure as "down", never raises
            health = self._down(str(e) or type(e).__name__)
        if self.embedding is not None:
            health = dataclasses.replace(health, semantic_off=await self._embedding_off())
        if not self.vectors.on:
            health = dataclasses.replace(health, semantic_off=self.vectors.reason)
        self._say_change(health)
        self._last, self._checked = health, time.monotonic()
        self.availability.set(LLM, health.status in ("ok", "busy"))  # busy is there: its tools stay offered
        return health

    async def _embedding_off(self) -> str:
        """Why search by meaning is off, as the separate embedding server says (``""``: on)."""
        e = self.embedding
        assert e is not None
        try:
            async with asyncio.timeout(self.probe_timeout):
                health = await e.health()
        except TimeoutError:
            return f"the embedding server at {e.url} does not answer (no answer within {self.probe_timeout:g} s)"
        except Exception as error:  # noqa: BLE001 - a probe reports any failure, never raises
            return f"the embedding server at {e.url} does not answer ({error})"
        if health.status == "down":
            return f"the embedding server at {e.url} does not answer ({health.detail})"
        return health.semantic_off

    def _say_change(self, health: Health) -> None:
        """One line when the model server stops answering (at start too), naming the setting to
        change, and one when it answers again: never a line a probe."""
        was = self._last.status if self._last is not None else None
        if health.status == was or health.status == "disabled":
            return
        p = self.provider
        setting = URL_SETTING.get(p.name, "the provider's URL")
        if health.status == "ok":
            if was is not None and was != "busy":
                _log.warning("the model server at %s answers again", p.url or p.name)
            return
        if health.status == "busy":
            _log.info("the model server at %s is busy: %s", p.url or p.name, health.detail)
            return
        _log.warning("the model server at %s (%s=%s, LLM_PROVIDER=%s) %s: %s. The assistant and search by meaning "
                     "wait for it; set %s to where it runs, or LLM_PROVIDER=none to run without a model "
                     "(docs/configuration.md)", p.url or p.name, setting, p.url, p.name,
                     "does not answer" if health.status == "down" else "answers, but", health.detail or health.status,
                     setting)

    def _down(self, detail: str) -> Health:
        p = self.provider
        return Health(p.name, "down", p.model, p.embed_model, detail=detail,
                      semantic_off=f"the embedding server at {p.url or p.name} does not answer")

    def _busy(self) -> bool:
        return self.gate.running > 0

    def start(self) -> None:
        if self._loop is None and not isinstance(self.provider, NoProvider):
            self._loop = asyncio.create_task(self._run(), name="fable-llm-status")

    async def _run(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self.every)

    async def close(self) -> None:
        for task in (self._loop, self._probing):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._loop = None
