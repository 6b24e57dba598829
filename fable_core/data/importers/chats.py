"""Import ChatGPT and Claude exports (``conversations.json``, alone or in the export's ZIP) as
conversations.

ChatGPT keeps each conversation as a ``mapping`` tree of messages (every edit and regeneration
a branch); the thread imported is the one the user last saw: from ``current_node`` up to the
root. System, tool and hidden messages are left out, and so is anything that is not text.
Claude keeps a flat ``chat_messages`` list (``sender`` human or assistant). The kind of each
conversation is recognised from its shape. Dry run by default; one transaction; conversations
imported before (same source and id, conversation still there) are skipped.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from fable_core.config import Settings
from fable_core.data.importers.archive import IMPORT, MAX_TOTAL, Source, is_zip, read_zip
from fable_core.data.importers.report import LISTED, ImportReport, ItemLine, already_imported, record
from fable_core.db.models import Conversation, Message
from fable_core.errors import InvalidInput, PayloadTooLarge
from fable_core.infra.offload import offload
from fable_core.tools import Context, Route, tool
from fable_core.tools.binary import MAX_BINARY, BinaryFile

__all__ = ["MAX_CONVERSATIONS", "import_conversations"]

_TITLE = 200
MAX_CONVERSATIONS = 20_000  # a heavy user's export holds a few thousand


@dataclass(slots=True)
class Chat:
    source: str  # chatgpt | claude
    key: str
    title: str
    created: datetime | None
    messages: list[tuple[str, str, datetime | None]] = field(default_factory=list)  # role, text, when
    left_out: Counter[str] = field(default_factory=Counter)  # kinds of content not kept → how many


def _upload_limit(settings: Settings) -> int:
    return MAX_BINARY  # docs/import.md: 64 MB, spooled to disk as it arrives on the REST route


@tool(group="data", title="Import conversations", scope="write", body_limit=_upload_limit,
      route=Route("POST", "/import/conversations"))
async def import_conversations(ctx: Context, content: BinaryFile, dry_run: bool = True) -> ImportReport:
    """Import a ChatGPT or Claude export as conversations.

    Dry run by default: read the report, then run with dry_run=false. Conversations imported
    before are skipped.

    Args:
        content: The export ZIP or conversations.json.
    """
    chats, skipped = await offload(IMPORT, content.size, _read_export, content.file)
    return await store_chats(ctx, ctx.session, chats, skipped, dry_run=dry_run)


def _read_export(content: Source) -> tuple[list[Chat], list[ItemLine]]:
    """The upload's conversations (on a worker thread: inflating and parsing take a while)."""
    return parse_export(_conversations_json(content))


def _conversations_json(content: Source) -> Any:
    if is_zip(content):
        entries = [e for e in read_zip(content, max_file=MAX_TOTAL)
                   if e.path.rsplit("/", 1)[-1] == "conversations.json"]
        if not entries or entries[0].content is None:
            raise InvalidInput("the ZIP holds no conversations.json: upload the ChatGPT or Claude export",
                               field="content")
        raw: bytes = entries[0].content
    else:
        raw = content if isinstance(content, bytes | bytearray) else content.read(MAX_TOTAL + 1)
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidInput(f"conversations.json is not valid JSON: {e}", field="content") from e
    except RecursionError as e:  # nested deeper than any export is
        raise InvalidInput("conversations.json is nested too deeply to be an export", field="content") from e
    if not isinstance(data, list):
        raise InvalidInput("conversations.json should be a list of conversations", field="content")
    if len(data) > MAX_CONVERSATIONS:
        raise PayloadTooLarge(f"conversations.json holds {len(data):,} entries; at most {MAX_CONVERSATIONS:,} "
                              "conversations are imported at once", limit=MAX_CONVERSATIONS)
    return data


def parse_export(data: list[Any]) -> tuple[list[Chat], list[ItemLine]]:
    chats: list[Chat] = []
    skipped: list[ItemLine] = []
    for n, item in enumerate(data):
        try:
            if isinstance(item, dict) and isinstance(item.get("mapping"), dict):
                chat = _chatgpt(item)
            elif isinstance(item, dict) and isinstance(item.get("chat_messages"), list):
                chat = _claude(item)
            else:
                skipped.append(ItemLine(item=f"#{n}", reason="neither a ChatGPT nor a Claude conversation"))
                continue
        except (AttributeError, TypeError, KeyError, ValueError) as e:  # a field of an unexpected shape
            skipped.append(ItemLine(item=f"#{n}", reason=f"malformed conversation ({type(e).__name__}: {e})"[:300]))
            continue
        if not chat.key:
            skipped.append(ItemLine(item=f"#{n}", title=chat.title, reason="has no id"))
        elif not chat.messages:
            skipped.append(ItemLine(item=chat.key, title=chat.title, reason="has no text messages"))
        else:
            chats.append(chat)
    return chats, skipped


def _chatgpt(item: dict[str, Any]) -> Chat:
    mapping: dict[str, Any] = item["mapping"]
    chat = Chat("chatgpt", str(item.get("conversation_id") or item.get("id") or ""), _title(item.get("title")),
                _when(item.get("create_time")))
    node_id = item.get("current_node")
    if node_id not in mapping:  # no current node: follow the first child from the root
        node_id = next((k for k, v in mapping.items() if isinstance(v, dict) and not v.get("parent")), None)
        while node_id in mapping and (mapping[node_id] or {}).get("children"):
            node_id = mapping[node_id]["children"][-1]
    thread: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id] if isinstance(mapping[node_id], dict) else {}
        thread.append(node)
        node_id = node.get("parent")
    for node in reversed(thread):
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        role = ((message.get("author") or {}).get("role"))
        hidden = (message.get("metadata") or {}).get("is_visually_hidden_from_conversation")
        content = message.get("content") or {}
        if role not in ("user", "assistant") or hidden:  # system prompts, tools' own turns
            continue
        text = _chatgpt_text(content, chat.left_out)
        if text.strip():
            chat.messages.append((role, text.strip("\n"), _when(message.get("create_time"))))
    return chat


def _chatgpt_text(content: dict[str, Any], left_out: Counter[str]) -> str:
    """A ChatGPT message's words: its text parts (of a plain or a multimodal message: an image in
    it is named, not lost without a word), or the code it ran, fenced; other kinds counted."""
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text", None):
        parts = []
        for part in content.get("parts") or []:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                what = str(part.get("content_type") or "attachment").replace("_asset_pointer", "")
                parts.append(f"[{what} not imported]")
                left_out[what] += 1
        return "\n".join(parts)
    if kind == "code" and isinstance(content.get("text"), str):
        language = content.get("language") if isinstance(content.get("language"), str) else ""
        return f"```{'' if language == 'unknown' else language}\n{content['text']}\n```"
    left_out[str(kind)] += 1
    return ""


def _claude(item: dict[str, Any]) -> Chat:
    chat = Chat("claude", str(item.get("uuid") or ""), _title(item.get("name")), _when(item.get("created_at")))
    for message in item["chat_messages"]:
        if not isinstance(message, dict):
            continue
        role = {"human": "user", "assistant": "assistant"}.get(message.get("sender"))  # type: ignore[arg-type]
        text = message.get("text")
        if not isinstance(text, str) or not text.strip():
            text = "\n".join(c.get("text", "") for c in message.get("content") or []
                             if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str))
        for c in message.get("content") or []:
            if isinstance(c, dict) and c.get("type") not in ("text", None):
                chat.left_out[str(c.get("type"))] += 1
        text += "".join(_claude_attachment(a, chat.left_out) for a in message.get("attachments") or [])
        if role and text.strip():
            chat.messages.append((role, text.strip("\n"), _when(message.get("created_at"))))
    return chat


def _claude_attachment(attachment: Any, left_out: Counter[str]) -> str:
    """A file pasted into a Claude message: its text, as Claude read it, fenced under its name."""
    if not isinstance(attachment, dict) or not isinstance(attachment.get("extracted_content"), str):
        left_out["attachment"] += 1
        return ""
    name = attachment.get("file_name") if isinstance(attachment.get("file_name"), str) else "attachment"
    return f"\n\n{name}:\n```\n{attachment['extracted_content']}\n```"


def _title(value: Any) -> str:
    title = " ".join(str(value).split()) if isinstance(value, str) else ""
    return title[:_TITLE] or "Imported conversation"


def _when(value: Any) -> datetime | None:
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value, UTC)
        if isinstance(value, str) and value:
            parsed = datetime.fromisoformat(value)
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


async def store_chats(
    ctx: Context, s: AsyncSession, chats: list[Chat], skipped: list[ItemLine], *, dry_run: bool,
) -> ImportReport:
    new: list[Chat] = []
    for source in ("chatgpt", "claude"):
        mine = [c for c in chats if c.source == source]
        done = await already_imported(s, ctx.user_id, source, "conversation", [c.key for c in mine])
        seen: set[str] = set()
        for chat in mine:
            if chat.key in done:
                skipped.append(ItemLine(item=chat.key, title=chat.title, id=done[chat.key], reason="imported before"))
            elif chat.key in seen:
                skipped.append(ItemLine(item=chat.key, title=chat.title, reason="appears twice in the export"))
            else:
                seen.add(chat.key)
                new.append(chat)
    created = [ItemLine(item=c.key, title=c.title) for c in new]
    if new and not dry_run:
        now = datetime.now(UTC)
        ids = list((await s.execute(
            insert(Conversation).returning(Conversation.id, sort_by_parameter_order=True),
            [{"user_id": ctx.user_id, "title": c.title, "created_at": c.created or now,
              "updated_at": max((w for _, _, w in c.messages if w), default=c.created or now)} for c in new],
        )).scalars().all())
        await s.execute(insert(Message), [
            {"conversation_id": cid, "user_id": ctx.user_id, "role": role, "content": text, "status": "done",
             "created_at": when or c.created or now, "updated_at": when or c.created or now}
            for cid, c in zip(ids, new, strict=True) for role, text, when in c.messages])
        for line, cid in zip(created, ids, strict=True):
            line.id = cid
        for source in ("chatgpt", "claude"):
            await record(s, ctx.user_id, source, "conversation",
                         [(c.key, cid) for c, cid in zip(new, ids, strict=True) if c.source == source])
    warnings = [ItemLine(item=c.key, title=c.title, reason="imported without what Fable does not keep: "
                         + ", ".join(f"{n} {kind}" for kind, n in sorted(c.left_out.items())))
                for c in new if c.left_out]
    return ImportReport(dry_run=dry_run, created=len(created), skipped=len(skipped),
                        created_items=created[:LISTED], skipped_items=skipped[:LISTED], warnings=warnings[:LISTED])
