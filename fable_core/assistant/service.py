"""The assistant, assembled: provider, embedder, embedding worker and generations, installed
on the runtime when Fable opens (``Fable.llm``, ``model_gate``, ``embedder``, ``assistant``).

With ``LLM_PROVIDER=none`` the provider refuses every LLM call and there is no embedder, so
search stays keyword-only; everything else works the same. When the database's vector extension
failed its self-test (``Database.vectors``, :mod:`fable_core.db.vectors`) nothing is embedded
into the database and nothing searched there by meaning (``Assistant.retrieval`` is None and so
is ``Fable.embedder``): the model still picks each turn's tools by meaning, in this process.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from fable_core.assistant import chat
from fable_core.assistant.conversations import check_conversation
from fable_core.assistant.embeddings import Embedder, EmbeddingWorker, embedding_provider, scan_filtered_indexes
from fable_core.assistant.gate import GatedProvider, ModelGate
from fable_core.assistant.parts import ASSISTANT, LLM, MODEL_GATE
from fable_core.assistant.project_summaries import ProjectSummaries
from fable_core.assistant.providers import NoProvider, Provider, make_provider
from fable_core.assistant.status import ProviderStatus
from fable_core.assistant.sweeps import sweep_now
from fable_core.assistant.toolpick import ToolPicker
from fable_core.assistant.toolprompt import tool_mode
from fable_core.config import server_concurrency
from fable_core.infra.generations import STALE_AFTER, Generations, StreamEvent, recover_interrupted
from fable_core.infra.shared_generations import SharedLog
from fable_core.knowledge.vectors import EMBEDDER
from fable_core.tools.access import belongs_to
from fable_core.tools.caller import Caller

if TYPE_CHECKING:
    from fable_core.tools.runtime import Closer, Runtime

__all__ = ["STALE_AFTER", "Assistant", "install", "install_assistant"]

_log = logging.getLogger(__name__)


class Assistant:
    """Everything chat and note AI features share in one process."""

    def __init__(self, fable: Runtime, provider: Provider, *, flush_interval: float = 2.0,
                 grace: float = 60.0, backfill_delay: float = 2.0) -> None:
        self.db = fable.db
        self.dispatcher = fable.dispatcher
        self.settings = fable.settings
        self.provider = provider
        self.gate = ModelGate(fable.settings.llm_concurrency_per_user, server_concurrency(fable.settings))
        self.status = ProviderStatus(provider, fable.availability, self.gate, vectors=fable.db.vectors)
        self.flush_interval = flush_interval
        self.shared = SharedLog(fable.db, grace=grace)  # chat answers across processes
        # a follower that finds a dead process's run sweeps at once (the sweeps are jobs: :mod:`.sweeps`)
        self.shared.on_stale = functools.partial(sweep_now, fable)
        self.generations = Generations(grace=grace, shared=self.shared)
        self.embedder: Embedder | None = None
        self.retrieval: Embedder | None = None  # the embedder, where the database may hold its vectors
        self.worker: EmbeddingWorker | None = None
        self.summaries: ProjectSummaries | None = None
        self.embed_provider: Provider | None = None  # a separate embedding server (EMBED_BASE_URL)
        if not isinstance(provider, NoProvider):
            self.embed_provider = embedding_provider(fable.settings, provider)
            self.status.embedding = self.embed_provider  # health asks it whether meaning is searched
            self.embedder = Embedder.from_settings(self.embed_provider or provider, fable.settings)
            if fable.db.vectors.on:
                self.retrieval = self.embedder
                shared = self.gate if self.embed_provider is None else None  # back off while it answers
                self.worker = EmbeddingWorker(fable.db, self.embedder, fable.events, gate=shared,
                                              backfill_delay=backfill_delay)
            self.summaries = ProjectSummaries(fable.db, fable.dispatcher, fable.events)
        self.tools = ToolPicker(fable.registry, fable.availability, self.embedder)  # each turn's tools
        self.tool_mode = tool_mode(fable.settings, provider.model)

    async def start(self) -> None:
        scan_filtered_indexes(self.db.engine)
        await self.db.engine.dispose()  # connections opened before the listener: replace them
        await recover_interrupted(self.db)  # at start: any old beat means a dead process
        self.shared.start()
        self.status.start()
        if self.worker is not None:
            self.worker.start()
        if self.summaries is not None:
            self.summaries.start()

    @property
    def stale_after(self) -> float:
        """Seconds without a flush after which an answer has nobody writing it: three missed
        flushes at least (the sweep, :mod:`.sweeps`)."""
        return max(STALE_AFTER, 3 * self.flush_interval)

    async def close(self) -> None:
        await self.status.close()
        await self.generations.close()
        await self.shared.close()
        if self.worker is not None:
            await self.worker.stop()
        if self.summaries is not None:
            await self.summaries.stop()
        await self.provider.close()
        if self.embed_provider is not None:
            await self.embed_provider.close()

    def model(self, caller: Caller, model: str | None = None) -> Provider:
        """The provider as ``caller`` may use it: within their share (:mod:`.gate`), asking for
        ``model`` (their ``default_model``) when given."""
        return self.provider if isinstance(self.provider, NoProvider) else GatedProvider(
            self.provider, self.gate, caller.user_id, model)

    # chat, for surfaces (fable_web.chat) -----------------------------------------------------

    async def send(self, caller: Caller, conversation_id: int, content: str,
                   note_ids: list[int] | None = None, exclude_note_id: int | None = None) -> dict[str, Any]:
        return await chat.send_message(self, caller, conversation_id, content, note_ids, exclude_note_id)

    async def retry(self, caller: Caller, conversation_id: int) -> dict[str, Any]:
        return await chat.retry_message(self, caller, conversation_id)

    async def resend(self, caller: Caller, conversation_id: int, content: str | None = None) -> dict[str, Any]:
        return await chat.resend_message(self, caller, conversation_id, content)

    def stop(self, conversation_id: int) -> bool:
        """Stop the conversation's answer if this process writes it."""
        return chat.stop_generation(self, conversation_id)

    async def stop_anywhere(self, conversation_id: int) -> bool:
        """Stop the conversation's answer on whichever process writes it."""
        return await self.generations.stop_anywhere(chat.chat_key(conversation_id))

    def forget(self, conversation_id: int) -> None:
        """The conversation is gone: stop its generation and drop its buffer."""
        self.generations.forget(chat.chat_key(conversation_id))

    async def follow(self, caller: Caller, conversation_id: int, last_event_id: str | None = None,
                     *, heartbeat: float | None = None) -> AsyncGenerator[StreamEvent, None]:
        """The conversation's generation events after ``last_event_id``: from this process's
        buffer when it runs the answer, else as stored in PostgreSQL by the process that does;
        with neither (finished over a minute ago) the stored reply. With ``heartbeat``, a
        ``ping`` event (no id) after that many quiet seconds."""
        key = chat.chat_key(conversation_id)
        buffer = self.generations.get(key)
        if buffer is None or not belongs_to(buffer.owner, caller.user_id):
            # The buffer knows whose it is (a deleted conversation's is dropped): only a caller
            # it does not recognise costs a query before the first event.
            async with chat.autocommit(self.db) as conn:
                await check_conversation(conn, caller, conversation_id)
            buffer = self.generations.get(chat.chat_key(conversation_id))
        if buffer is None or buffer.done:  # perhaps the next answer, written by another process
            remote = await self.shared.open(key, last_event_id, heartbeat=heartbeat)
            if remote is not None and (buffer is None or remote.message_id != buffer.message_id):
                last: StreamEvent | None = None
                async for event in remote:
                    if event is not None:
                        last = event
                    yield event if event is not None else StreamEvent("", "ping", {})
                if last is not None and last.event not in ("done", "error"):  # its process died
                    end = await chat.stored_end(self, caller, conversation_id, last)
                    if end is not None:
                        yield end
                return
            if remote is not None:
                remote.close()
            if buffer is None:
                stored = await chat.stored_reply(self, caller, conversation_id)
                if stored is not None:
                    yield stored
                return
        async for event in buffer.follow(last_event_id, heartbeat=heartbeat):
            yield event if event is not None else StreamEvent("", "ping", {})

    async def wait(self, conversation_id: int) -> None:
        await self.generations.wait(chat.chat_key(conversation_id))


async def install_assistant(fable: Runtime, **options: Any) -> Assistant:
    """Create the assistant for ``fable``, install its parts on the runtime (the provider,
    the model gate, the query embedder and itself: :mod:`fable_core.assistant.parts`), and start it."""
    provider = make_provider(fable.settings)
    assistant = Assistant(fable, provider, **options)
    fable.install(LLM, provider)
    fable.install(MODEL_GATE, assistant.gate)
    fable.install(EMBEDDER, assistant.retrieval)
    fable.install(ASSISTANT, assistant)
    await assistant.start()
    return assistant


async def install(fable: Runtime) -> Closer:
    """The assistant capability's hook (:mod:`fable_core.capabilities`)."""
    return (await install_assistant(fable)).close
