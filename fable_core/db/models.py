"""SQLAlchemy models: the schema Alembic migrations build, table by table.

Tasks are notes: a note whose ``status`` is not NULL is a task. Every user-owned row carries
``user_id`` so that ownership checks (``fable_core.tools.access``) are one predicate.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Literal

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Computed,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, validates

from fable_core.db import frontmatter
from fable_core.db.hashtags import text_tags, with_text_tags

__all__ = [
    "AccountToken",
    "ApiKey",
    "AppLog",
    "Base",
    "CaldavAccount",
    "CalendarEvent",
    "Conversation",
    "EventSyncMark",
    "EventTombstone",
    "EventVersion",
    "Feed",
    "FeedItem",
    "Generation",
    "GenerationEvent",
    "Group",
    "GroupMember",
    "Image",
    "InstanceSetting",
    "JournalDay",
    "LoginSession",
    "Message",
    "Milestone",
    "Moment",
    "Note",
    "NoteDraft",
    "NoteEmbedding",
    "NoteLink",
    "NoteVersion",
    "NoteWord",
    "Notification",
    "OAuthClient",
    "OAuthCode",
    "OAuthGrant",
    "OAuthToken",
    "Profile",
    "ProfileObservation",
    "Project",
    "PushSubscription",
    "RateLimitHit",
    "Setting",
    "Share",
    "TaskLog",
    "User",
    "WeatherForecast",
    "title_key",
]


class Base(DeclarativeBase):
    pass


def _created() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


def _updated() -> Mapped[datetime]:
    return mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now(), nullable=False
    )


def _owner() -> Mapped[int]:
    return mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    email: Mapped[str | None] = mapped_column(String(320))
    password_hash: Mapped[str | None] = mapped_column(Text)
    role: Mapped[str] = mapped_column(String(16), server_default="user", nullable=False)
    email_verified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    is_active: Mapped[bool] = mapped_column(server_default=text("true"), nullable=False)
    created_at: Mapped[datetime] = _created()
    last_login_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        # An address proven by its owner belongs to one account: password resets go there.
        # Emails are stored lower-cased, so the plain column is the key.
        Index("uq_users_verified_email", "email", unique=True,
              postgresql_where=text("email_verified_at IS NOT NULL")),
    )


class LoginSession(Base):
    """A signed-in browser: the cookie carries a random token, of which only the SHA-256 is
    kept. Signing out deletes the row, so a copied cookie dies with it."""

    __tablename__ = "login_sessions"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = _owner()
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    csrf: Mapped[str] = mapped_column(String(64), nullable=False)
    user_agent: Mapped[str] = mapped_column(String(200), server_default="", nullable=False)
    ip: Mapped[str] = mapped_column(String(64), server_default="", nullable=False)
    created_at: Mapped[datetime] = _created()
    last_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(),
                                                   nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    prefix: Mapped[str] = mapped_column(String(16), nullable=False)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    scope: Mapped[str] = mapped_column(String(8), nullable=False)
    created_at: Mapped[datetime] = _created()
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    toolsets: Mapped[list[str] | None] = mapped_column(ARRAY(Text))  # its MCP offer; null: the server's


class AccountToken(Base):
    """A single-use secret sent to a person: an invitation or a password reset.

    Only the SHA-256 of the token is stored. ``used_at`` is set when it is redeemed; a token
    past ``expires_at`` or already used is refused.
    """

    __tablename__ = "account_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    email: Mapped[str | None] = mapped_column(String(320))
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class InstanceSetting(Base):
    """Instance-wide settings admins change at run time (e.g. whether registration is open)."""

    __tablename__ = "instance_settings"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[Any] = mapped_column(JSONB, nullable=False)
    updated_at: Mapped[datetime] = _updated()


class IdempotentCall(Base):
    """A write call's result, kept under the idempotency key its caller sent with it
    (:mod:`fable_core.tools.idempotency`): the same key again answers this, writing nothing."""

    __tablename__ = "idempotent_calls"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    tool: Mapped[str] = mapped_column(String(100), nullable=False)
    fingerprint: Mapped[str] = mapped_column(String(64), nullable=False)
    result: Mapped[Any | None] = mapped_column(JSONB)  # None while a call in phases runs
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)

    __table_args__ = (Index("ix_idempotent_calls_created_at", "created_at"),)


class RateLimitHit(Base):
    """One counted attempt in a rate-limit bucket (e.g. ``login:203.0.113.7``).

    Kept in PostgreSQL so that limits hold across replicas; old hits are pruned as buckets are hit.
    """

    __tablename__ = "rate_limit_hits"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    bucket: Mapped[str] = mapped_column(String(200), nullable=False)
    hit_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )

    __table_args__ = (Index("ix_rate_limit_hits_bucket_hit_at", "bucket", "hit_at"),)


class Setting(Base):
    """Per-user key/value settings (timezone, default model, assistant name, ...)."""

    __tablename__ = "settings"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[Any] = mapped_column(JSONB, nullable=False)
    updated_at: Mapped[datetime] = _updated()


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    description: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    goal: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    status: Mapped[str] = mapped_column(String(16), server_default="active", nullable=False)
    color: Mapped[str | None] = mapped_column(String(16))
    auto_summary: Mapped[str | None] = mapped_column(Text)
    summary_updated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


class Milestone(Base):
    __tablename__ = "milestones"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), nullable=False, index=True
    )
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    description: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    status: Mapped[str] = mapped_column(String(16), server_default="open", nullable=False)
    order_index: Mapped[int] = mapped_column(Integer, server_default="0", nullable=False)
    due_date: Mapped[date | None] = mapped_column(Date)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()


_WORD = re.compile(r"[^\W_]+")


def title_key(title: str) -> str:
    """How titles compare: case-folded words joined by single spaces, punctuation dropped.

    Duplicate detection and wikilink resolution use it. Computed in Python (not SQL) so that it
    does not depend on the database's locale.
    """
    return " ".join(_WORD.findall(title.casefold()))


def alias_keys(body: str) -> list[str] | None:
    """The title keys of the aliases ``body``'s front matter names (:mod:`.frontmatter`), each
    once and none that is empty; None when there are none."""
    keys = list(dict.fromkeys(k for k in map(title_key, frontmatter.aliases(body)) if k))
    return keys or None


# title A, tags B, body C (weighed by fable_core.knowledge.ranking.WEIGHTS); tags give their words,
# `project/alpha` both `project` and `alpha` (fable_tag_words, migration 0012)
SEARCHED_BODY = 150_000
"""How much of a body its search vector holds (migration 0038): a tsvector holds at most 1 MB,
which a 1 MB body of distinct words overflows (it was refused with 503); the start of it is
what a search by words finds, the whole of it is stored."""
SEARCH_VECTOR_SQL = (
    "setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || "
    "setweight(to_tsvector('english'::regconfig, fable_tag_words(tags)), 'B') || "
    f"setweight(to_tsvector('english'::regconfig, left(coalesce(body, ''), {SEARCHED_BODY})), 'C') || "
    "setweight(jsonb_to_tsvector('english'::regconfig, coalesce(fields, '{}'::jsonb), '[\"string\"]'), 'B')"
)
TITLE_VECTOR_SQL = "to_tsvector('english'::regconfig, coalesce(title, ''))"


class Note(Base):
    """A note; with a non-NULL ``status`` it is a task; with an ``entity`` (person, place, list) a
    structured note whose ``fields`` (JSONB, validated by ``fable_core.knowledge.entities.fields``) are
    searched like its tags."""

    __tablename__ = "notes"
    # server-side timestamps and generated columns come back with INSERT/UPDATE ... RETURNING,
    # so no tool needs a refresh round trip after saving
    __mapper_args__ = {"eager_defaults": True}  # noqa: RUF012 - SQLAlchemy's class-level setting

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    title: Mapped[str] = mapped_column(String(300), nullable=False)
    body: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    tags: Mapped[list[str]] = mapped_column(
        ARRAY(Text), server_default=text("'{}'::text[]"), nullable=False
    )
    parent_id: Mapped[int | None] = mapped_column(
        ForeignKey("notes.id", ondelete="SET NULL"), index=True
    )
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="SET NULL"))
    milestone_id: Mapped[int | None] = mapped_column(
        ForeignKey("milestones.id", ondelete="SET NULL"), index=True
    )
    status: Mapped[str | None] = mapped_column(String(16))
    priority: Mapped[str | None] = mapped_column(String(16))
    due_date: Mapped[date | None] = mapped_column(Date)
    recurrence_rule: Mapped[str | None] = mapped_column(Text)
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # who is to do a task (someone who may change it); NULL: nobody in particular (0043)
    assignee_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    entity: Mapped[str | None] = mapped_column(String(16))
    fields: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    version: Mapped[int] = mapped_column(Integer, server_default="1", nullable=False)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()
    title_key: Mapped[str] = mapped_column(Text, nullable=False)
    # the title keys of the other names its front matter gives it (``aliases:``): a [[link]] to
    # one of them finds this note when no note has it as its title; NULL when there are none
    alias_keys: Mapped[list[str] | None] = mapped_column(ARRAY(Text))
    # the tags its body's #tags give it (:mod:`.hashtags`), among ``tags``: they go when the text
    # does, and stay when the tags are set; NULL when there are none (0043)
    inline_tags: Mapped[list[str] | None] = mapped_column(ARRAY(Text))
    title_key_reversed: Mapped[str] = mapped_column(Text, Computed("reverse(title_key)", persisted=True))
    # only PostgreSQL reads it (search); never loaded into Python
    search_vector: Mapped[Any] = mapped_column(
        TSVECTOR, Computed(SEARCH_VECTOR_SQL, persisted=True), deferred=True
    )
    # the title's words alone: search finds the notes a query names through its index, whatever their age
    title_vector: Mapped[Any] = mapped_column(
        TSVECTOR, Computed(TITLE_VECTOR_SQL, persisted=True), deferred=True
    )

    @validates("title")
    def _keep_title_key(self, _: str, value: str) -> str:
        self.title_key = title_key(value)
        return value

    @validates("body")
    def _keep_alias_keys(self, _: str, value: str) -> str:
        keys = alias_keys(value)
        if keys != self.__dict__.get("alias_keys"):  # as loaded: never a load of its own
            self.alias_keys = keys  # only a change counts as one (:func:`~fable_core.knowledge.wikilinks.sync_aliases`)
        found = text_tags(value)
        before = self.__dict__.get("inline_tags")
        if found != before:
            self.inline_tags = found
            gone = set(before or ()) - set(found or ())
            self.tags = [t for t in self.__dict__.get("tags") or () if t not in gone]  # + found, below
        return value

    @validates("tags")
    def _keep_inline_tags(self, _: str, value: list[str]) -> list[str]:
        return with_text_tags(value, self.__dict__.get("inline_tags"))

    @property
    def kind(self) -> Literal["note", "task", "person", "place", "list"]:
        if self.entity is not None:
            return self.entity  # type: ignore[return-value]  # the check constraint's values
        return "task" if self.status is not None else "note"

    __table_args__ = (
        # a small pending list: searches scan it linearly until autovacuum merges it (0006)
        Index("ix_notes_tags", "tags", postgresql_using="gin", postgresql_with={"gin_pending_list_limit": 256}),
        Index("ix_notes_search_vector", "search_vector", postgresql_using="gin",
              postgresql_with={"gin_pending_list_limit": 256}),
        Index("ix_notes_title_vector", "title_vector", postgresql_using="gin",
              postgresql_with={"gin_pending_list_limit": 256}),
        # GiST, not GIN: it answers both `title_key % key` and the nearest-first
        # `ORDER BY title_key <-> key LIMIT n` that duplicate checks need at 100k notes
        Index(
            "ix_notes_title_key_trgm",
            "title_key",
            postgresql_using="gist",
            postgresql_ops={"title_key": "gist_trgm_ops"},
        ),
        # Prefix and suffix scans (LIKE 'abc%') for the near-duplicate title check; the first
        # also serves exact title-key lookups (wikilinks, exact duplicates).
        Index("ix_notes_user_title_key", "user_id", "title_key",
              postgresql_ops={"title_key": "text_pattern_ops"}),
        Index("ix_notes_user_title_key_reversed", "user_id", "title_key_reversed",
              postgresql_ops={"title_key_reversed": "text_pattern_ops"}),
        Index("ix_notes_user_updated", "user_id", "updated_at", "id"),
        # a project's notes newest first: how a shared project's notes join a listing (0013)
        Index("ix_notes_project_updated", "project_id", "updated_at", "id"),
        Index("ix_notes_user_status_due", "user_id", "status", "due_date"),
        # a user's people, places or lists by name (0020)
        Index("ix_notes_user_entity_title", "user_id", "entity", "title_key",
              postgresql_where=text("entity IS NOT NULL")),
        CheckConstraint("entity IN ('person', 'place', 'list')", name="ck_notes_entity"),
        # the few notes with aliases, for the links no title answers (0042)
        Index("ix_notes_alias_keys", "alias_keys", postgresql_using="gin",
              postgresql_where=text("alias_keys IS NOT NULL")),
        # the tasks assigned to someone (0043)
        Index("ix_notes_assignee_id", "assignee_id", postgresql_where=text("assignee_id IS NOT NULL")),
    )


class NoteVersion(Base):
    """A snapshot of a note as it was after one save; ``version`` counts from 1.

    What changed from the version before is counted when the version is stored (0010), so that
    listing versions reads no bodies: whether the title changed, the body's lines added and
    removed (as multisets of lines: a moved line counts as neither), the tags added and removed.
    A first version has none of them.
    """

    __tablename__ = "note_versions"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    note_id: Mapped[int] = mapped_column(
        ForeignKey("notes.id", ondelete="CASCADE"), nullable=False
    )
    user_id: Mapped[int] = _owner()
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    title: Mapped[str] = mapped_column(String(300), nullable=False)
    body: Mapped[str] = mapped_column(Text, nullable=False)
    tags: Mapped[list[str]] = mapped_column(ARRAY(Text), nullable=False)
    created_at: Mapped[datetime] = _created()
    body_length: Mapped[int] = mapped_column(Integer, server_default="0", nullable=False)
    title_changed: Mapped[bool] = mapped_column(server_default=text("false"), nullable=False)
    lines_added: Mapped[int] = mapped_column(Integer, server_default="0", nullable=False)
    lines_removed: Mapped[int] = mapped_column(Integer, server_default="0", nullable=False)
    tags_added: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default=text("'{}'::text[]"), nullable=False)
    tags_removed: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default=text("'{}'::text[]"), nullable=False)
    fields: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))  # a structured note's fields (0020)
    fields_changed: Mapped[bool] = mapped_column(server_default=text("false"), nullable=False)

    __table_args__ = (UniqueConstraint("note_id", "version", name="uq_note_versions_note_version"),)


class NoteWord(Base):
    """A word the user's notes have had (title or body, 3-32 letters, lower case, no stop
    words; kept after the notes saying it are deleted): the vocabulary a search that finds few
    notes corrects its misspelt words against (:mod:`fable_core.knowledge.vocabulary`, which
    adds the words of every note written)."""

    __tablename__ = "note_words"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    word: Mapped[str] = mapped_column(Text, primary_key=True)

    __table_args__ = (
        # `word % :typo`, the candidates of a correction (0011)
        Index("ix_note_words_word_trgm", "word", postgresql_using="gin", postgresql_ops={"word": "gin_trgm_ops"}),
    )


class NoteImage(Base):
    """An image a note embeds (``/api/images/<id>``), and who wrote that embed into it: the
    note's readers may see the image only when its owner did (:func:`fable_core.tools.access.image_readable`),
    so an editor of someone's note cannot plant the ids of their images to read them. Kept by
    every save of a body (:mod:`fable_core.knowledge.image_refs`); an embed keeps its first writer."""

    __tablename__ = "note_images"

    note_id: Mapped[int] = mapped_column(ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True)
    image_id: Mapped[int] = mapped_column(ForeignKey("images.id", ondelete="CASCADE"), primary_key=True, index=True)
    added_by: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)


class NoteLink(Base):
    """A ``[[wikilink]]`` from one note to a title; ``target_id`` is NULL until the title exists."""

    __tablename__ = "note_links"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = _owner()
    source_id: Mapped[int] = mapped_column(
        ForeignKey("notes.id", ondelete="CASCADE"), nullable=False, index=True
    )
    target_id: Mapped[int | None] = mapped_column(
        ForeignKey("notes.id", ondelete="SET NULL"), index=True
    )
    target_key: Mapped[str] = mapped_column(Text, nullable=False)
    target_title: Mapped[str] = mapped_column(String(300), nullable=False)

    __table_args__ = (
        Index("ix_note_links_user_target_key", "user_id", "target_key"),
        # the links still waiting for their title: what every new or renamed note looks up (0007)
        Index("ix_note_links_unresolved", "user_id", "target_key", postgresql_where=text("target_id IS NULL")),
    )


class TaskLog(Base):
    """Work logged against a task: when, how long, what."""

    __tablename__ = "task_logs"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    note_id: Mapped[int] = mapped_column(
        ForeignKey("notes.id", ondelete="CASCADE"), nullable=False, index=True
    )
    work_date: Mapped[date] = mapped_column(Date, nullable=False)
    minutes: Mapped[int | None] = mapped_column(Integer)
    description: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    created_at: Mapped[datetime] = _created()


class AppLog(Base):
    """Audit, usage and error records. ``user_id`` survives user deletion as ``username``."""

    __tablename__ = "app_logs"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    created_at: Mapped[datetime] = _created()
    category: Mapped[str] = mapped_column(String(16), nullable=False)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    username: Mapped[str | None] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(100), nullable=False)
    surface: Mapped[str | None] = mapped_column(String(16))
    endpoint: Mapped[str | None] = mapped_column(Text)
    method: Mapped[str | None] = mapped_column(String(8))
    status_code: Mapped[int | None] = mapped_column(Integer)
    duration_ms: Mapped[float | None] = mapped_column()
    error_type: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    traceback: Mapped[str | None] = mapped_column(Text)
    details: Mapped[Any | None] = mapped_column(JSONB)

    __table_args__ = (Index("ix_app_logs_category_created", "category", "created_at"),
                      Index("ix_app_logs_created", "created_at", "id"))


# --- assistant ---------------------------------------------------------------------------------


class Conversation(Base):
    """A chat with the assistant. ``rag_project_id`` scopes retrieval: NULL = notes outside any
    project, -1 = all notes, a project id = that project's notes (no FK: -1 is not a row)."""

    __tablename__ = "conversations"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    title: Mapped[str] = mapped_column(String(200), server_default="New conversation", nullable=False)
    model: Mapped[str | None] = mapped_column(String(200))
    conversation_type: Mapped[str] = mapped_column(String(16), server_default="chat", nullable=False)
    day_date: Mapped[date | None] = mapped_column(Date)
    rag_project_id: Mapped[int | None] = mapped_column(Integer)
    summary: Mapped[str | None] = mapped_column(Text)
    summary_message_id: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (Index("ix_conversations_user_updated", "user_id", "updated_at", "id"),)


class Message(Base):
    """One turn of a conversation. An assistant message is ``generating`` while its text streams
    (flushed every few seconds), then ``done``, ``stopped``, ``error`` or ``interrupted``;
    ``error`` says in words why an answer failed or was cut off."""

    __tablename__ = "messages"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False
    )
    user_id: Mapped[int] = _owner()
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    content: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    status: Mapped[str] = mapped_column(String(16), server_default="done", nullable=False)
    tool_events: Mapped[Any | None] = mapped_column(JSONB)
    context: Mapped[Any | None] = mapped_column(JSONB)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (
        Index("ix_messages_conversation_id", "conversation_id", "id"),
        Index("ix_messages_generating", "status", postgresql_where=text("status = 'generating'")),
    )


class NoteEmbedding(Base):
    """A note's embedding under one model. ``embedding`` has no fixed dimension (models differ);
    HNSW indexes are partial expression indexes per dimension (``ix_note_embeddings_hnsw_<dims>``),
    created by the migration for 768 (nomic-embed-text) and on first use for any other."""

    __tablename__ = "note_embeddings"

    note_id: Mapped[int] = mapped_column(
        ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = _owner()
    model: Mapped[str] = mapped_column(String(200), nullable=False)
    dims: Mapped[int] = mapped_column(Integer, nullable=False)
    content_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    embedding: Mapped[Any] = mapped_column(Vector(), nullable=False)
    updated_at: Mapped[datetime] = _updated()


class NoteDraft(Base):
    """The assistant's proposed rewrite of a note, kept per user and note until accepted or
    rejected. ``base_version`` is the note version it was written against."""

    __tablename__ = "note_drafts"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    note_id: Mapped[int] = mapped_column(ForeignKey("notes.id", ondelete="CASCADE"), nullable=False)
    instruction: Mapped[str] = mapped_column(Text, nullable=False)
    section: Mapped[str | None] = mapped_column(String(300))
    content: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    status: Mapped[str] = mapped_column(String(16), server_default="generating", nullable=False)
    base_version: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (UniqueConstraint("user_id", "note_id", name="uq_note_drafts_user_note"),)


# --- sharing -----------------------------------------------------------------------------------


class Group(Base):
    """A platform-wide group of users, to share with many at once. Admins create and delete
    groups; the group's owners manage its members. Names are unique, case ignored."""

    __tablename__ = "groups"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    description: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = _created()

    __table_args__ = (Index("uq_groups_name", text("lower(name)"), unique=True),)


class GroupMember(Base):
    """A user in a group, as ``member`` or ``owner`` (owners manage the members)."""

    __tablename__ = "group_members"

    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True,
                                         index=True)
    role: Mapped[str] = mapped_column(String(8), server_default="member", nullable=False)
    created_at: Mapped[datetime] = _created()

    __table_args__ = (CheckConstraint("role IN ('member', 'owner')", name="ck_group_members_role"),)


class Share(Base):
    """A project or a note (exactly one) shared with a user or a group (exactly one) at a
    permission: ``viewer`` reads, ``editor`` changes content, ``admin`` may also reshare and
    delete. ``owner_id`` is the shared row's owner (rows never change owner), so "shared by me"
    and the owner's name need no join through the row; ``shared_by`` is who made the share.
    Who may see what is decided in :mod:`fable_core.tools.access` alone."""

    __tablename__ = "shares"

    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    note_id: Mapped[int | None] = mapped_column(ForeignKey("notes.id", ondelete="CASCADE"), index=True)
    grantee_user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    grantee_group_id: Mapped[int | None] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), index=True)
    permission: Mapped[str] = mapped_column(String(8), nullable=False)
    shared_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (
        CheckConstraint("num_nonnulls(project_id, note_id) = 1", name="ck_shares_one_item"),
        CheckConstraint("num_nonnulls(grantee_user_id, grantee_group_id) = 1", name="ck_shares_one_grantee"),
        CheckConstraint("permission IN ('viewer', 'editor', 'admin')", name="ck_shares_permission"),
        # one share per item and grantee: sharing again changes its permission
        Index("uq_shares_project_user", "project_id", "grantee_user_id", unique=True,
              postgresql_where=text("project_id IS NOT NULL AND grantee_user_id IS NOT NULL")),
        Index("uq_shares_project_group", "project_id", "grantee_group_id", unique=True,
              postgresql_where=text("project_id IS NOT NULL AND grantee_group_id IS NOT NULL")),
        Index("uq_shares_note_user", "note_id", "grantee_user_id", unique=True,
              postgresql_where=text("note_id IS NOT NULL AND grantee_user_id IS NOT NULL")),
        Index("uq_shares_note_group", "note_id", "grantee_group_id", unique=True,
              postgresql_where=text("note_id IS NOT NULL AND grantee_group_id IS NOT NULL")),
    )


# --- notifications -----------------------------------------------------------------------------


class Notification(Base):
    """Something that happened for a user: a share made or revoked, an answer finished while
    they were away, a task due. ``data`` says what it is about (ids to link to); ``key``, when
    set, makes it once-only (a day's reminder for a task: replicas racing to send it insert
    one row). ``push_state`` is ``pending`` until the Web Push sender claims it (``sending``,
    since ``push_claimed_at``), then ``sent``, ``failed`` or ``skipped`` (no device subscribed, or
    the user's preferences say not to push it)."""

    __tablename__ = "notifications"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = _owner()
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    title: Mapped[str] = mapped_column(String(300), nullable=False)
    body: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    data: Mapped[Any | None] = mapped_column(JSONB)
    key: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = _created()
    read_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    push_state: Mapped[str] = mapped_column(String(8), server_default="pending", nullable=False)
    push_claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        Index("ix_notifications_user_id_id", "user_id", "id"),
        Index("ix_notifications_unread", "user_id", postgresql_where=text("read_at IS NULL")),
        Index("ix_notifications_push_pending", "id", postgresql_where=text("push_state = 'pending'")),
        # claims a process took and never finished (it died): the sweep hands them back
        Index("ix_notifications_push_sending", "push_claimed_at", postgresql_where=text("push_state = 'sending'")),
        Index("uq_notifications_user_key", "user_id", "key", unique=True, postgresql_where=text("key IS NOT NULL")),
    )


class PushSubscription(Base):
    """One browser or device subscribed to Web Push for a user: the push service's endpoint and
    the keys its messages are encrypted with (RFC 8291). A 404 or 410 from the endpoint deletes
    the row."""

    __tablename__ = "push_subscriptions"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    endpoint: Mapped[str] = mapped_column(Text, unique=True, nullable=False)
    p256dh: Mapped[str] = mapped_column(String(200), nullable=False)
    auth: Mapped[str] = mapped_column(String(100), nullable=False)
    user_agent: Mapped[str] = mapped_column(String(200), server_default="", nullable=False)
    created_at: Mapped[datetime] = _created()
    last_sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    failures: Mapped[int] = mapped_column(Integer, server_default="0", nullable=False)



# --- daily: weather, moments, the profile ------------------------------------------------------


class WeatherForecast(Base):
    """A user's cached forecast for one place (a journal location's name, or ``lat,lon``), as
    Open-Meteo sent it (trimmed). ``previous`` is the last forecast fetched on an earlier day
    (``previous_fetched_at``): what "warmer than forecast yesterday" or "rain now expected" are
    measured against (:mod:`fable_core.daily.weather.changes`)."""

    __tablename__ = "weather_forecasts"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    location: Mapped[str] = mapped_column(String(60), nullable=False)
    lat: Mapped[float] = mapped_column(Float, nullable=False)
    lon: Mapped[float] = mapped_column(Float, nullable=False)
    fetched_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    forecast: Mapped[Any] = mapped_column(JSONB, nullable=False)
    previous: Mapped[Any | None] = mapped_column(JSONB)
    previous_fetched_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (UniqueConstraint("user_id", "location", name="uq_weather_forecasts_user_location"),)


# what a moment's keyword search matches: its text most, then its tags' words, mood and place
MOMENT_VECTOR_SQL = (
    "setweight(to_tsvector('english'::regconfig, coalesce(text, '')), 'A') || "
    "setweight(to_tsvector('english'::regconfig, fable_tag_words(tags) || ' ' || coalesce(mood, '') || ' ' || "
    "coalesce(location, '')), 'B')"
)


class Moment(Base):
    """Something that happened to the user, in their words, at a time (UTC), with an optional
    mood, tags and place. ``embedding`` (under ``embedding_model``) is its vector for search by
    meaning, written when it is recorded or changed while an embedder answers (else NULL: found
    by its words only)."""

    __tablename__ = "moments"
    __mapper_args__ = {"eager_defaults": True}  # noqa: RUF012 - SQLAlchemy's class-level setting

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    # before ``text``, which names the column from here on in this class body
    tags: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default=text("'{}'::text[]"), nullable=False)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    mood: Mapped[str | None] = mapped_column(String(40))
    location: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()
    search_vector: Mapped[Any] = mapped_column(TSVECTOR, Computed(MOMENT_VECTOR_SQL, persisted=True), deferred=True)
    embedding: Mapped[Any | None] = mapped_column(Vector(), deferred=True)
    embedding_model: Mapped[str | None] = mapped_column(String(200))

    __table_args__ = (
        Index("ix_moments_user_at", "user_id", "at", "id"),
        Index("ix_moments_search_vector", "search_vector", postgresql_using="gin"),
        Index("ix_moments_tags", "tags", postgresql_using="gin"),
    )


class Profile(Base):
    """What Fable knows of a user: the ``facts`` they state (an ordered list they edit) and the
    ``summary`` the model learns from those and the observations (or the user writes).
    ``changed_at`` moves with every change of facts or observations; a summary older than it is
    due to be learned again (:mod:`fable_core.assistant.profile_learning`)."""

    __tablename__ = "profiles"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    facts: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default=text("'{}'::text[]"), nullable=False)
    summary: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    summary_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


class ProfileObservation(Base):
    """Something the assistant noticed about a user and recorded (a preference, a habit)."""

    __tablename__ = "profile_observations"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    text: Mapped[str] = mapped_column(String(500), nullable=False)
    created_at: Mapped[datetime] = _created()

    __table_args__ = (Index("ix_profile_observations_user_id_id", "user_id", "id"),)


# --- journal -----------------------------------------------------------------------------------


class JournalDay(Base):
    """A user's journal for one day (a date in their zone): its conversation (``conversation_type``
    ``journal``) and its morning prep. ``prep_state`` is ``none`` until a prep claims the row
    (``preparing``, since ``claimed_at``: several processes racing, one wins), then ``done`` (the
    opener is ``opener_message_id``, written by the model or from the sections: ``opener_source``),
    ``skipped`` (the user wrote before the scheduled prep: an opener must come first) or ``failed``
    (``error`` says why). A claim holds until ``lease_until``, renewed by its holder while it
    works; ``attempts`` counts the claims (and fences a holder that was taken over); a failed day
    is tried again from ``retry_at`` (null: not again)."""

    __tablename__ = "journal_days"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    day: Mapped[date] = mapped_column(Date, nullable=False)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False, unique=True)
    prep_state: Mapped[str] = mapped_column(String(10), server_default="none", nullable=False)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    attempts: Mapped[int] = mapped_column(Integer, server_default="0", nullable=False)
    retry_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    prepared_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    opener_message_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("messages.id", ondelete="SET NULL"))
    opener_source: Mapped[str | None] = mapped_column(String(10))
    sections: Mapped[list[str] | None] = mapped_column(ARRAY(Text))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()

    __table_args__ = (
        UniqueConstraint("user_id", "day", name="uq_journal_days_user_day"),
        CheckConstraint("prep_state IN ('none', 'preparing', 'done', 'skipped', 'failed')",
                        name="ck_journal_days_prep_state"),
    )


# --- calendar ----------------------------------------------------------------------------------


class CalendarEvent(Base):
    """An event of its owner's calendar (events are never shared).

    A timed event is ``start_at``/``end_at`` (UTC) and the IANA ``timezone`` it was made in, in
    which its recurrence expands (so 9:00 stays 9:00 across DST); an all-day event is
    ``start_date``/``end_date`` (end exclusive, as in iCalendar), never shifted by a zone. A
    recurring event has an ``rrule``, the occurrences it skips in ``exdates``, and override rows
    for occurrences changed on their own: ``series_id`` is the series, ``recurrence_id`` the
    original start of the occurrence it replaces. ``exdates`` and ``recurrence_id`` are wall-clock
    times in the series' zone (midnight for all-day), as iCalendar's EXDATE and RECURRENCE-ID are.

    ``span_start``/``span_end`` bound in UTC what the row may cover (all-day dates widened by the
    farthest zones, -12 and +14 hours; ``span_end`` NULL: it recurs forever), so a range is one
    index scan. ``uid`` is the iCalendar UID, unique per owner (an override carries its series').
    ``caldav_href``/``caldav_etag`` are written by CalDAV sync only; ``updated_at`` moves on every
    change. Who sees an event is decided in :mod:`fable_core.tools.access` (its owner only).
    """

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    uid: Mapped[str] = mapped_column(String(255), nullable=False)
    series_id: Mapped[int | None] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"))
    recurrence_id: Mapped[datetime | None] = mapped_column(DateTime(timezone=False))
    title: Mapped[str] = mapped_column(String(300), nullable=False)
    description: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    location: Mapped[str] = mapped_column(String(500), server_default="", nullable=False)
    color: Mapped[str | None] = mapped_column(String(7))
    all_day: Mapped[bool] = mapped_column(server_default=text("false"), nullable=False)
    start_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    end_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    start_date: Mapped[date | None] = mapped_column(Date)
    end_date: Mapped[date | None] = mapped_column(Date)
    timezone: Mapped[str | None] = mapped_column(String(64))
    rrule: Mapped[str | None] = mapped_column(String(500))
    exdates: Mapped[list[datetime]] = mapped_column(ARRAY(DateTime(timezone=False)), server_default="{}",
                                                    nullable=False)
    span_start: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    span_end: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    note_id: Mapped[int | None] = mapped_column(ForeignKey("notes.id", ondelete="SET NULL"))
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="SET NULL"))
    caldav_href: Mapped[str | None] = mapped_column(Text)
    caldav_etag: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (
        CheckConstraint(
            "(all_day AND start_date IS NOT NULL AND end_date > start_date AND start_at IS NULL AND end_at IS NULL"
            " AND timezone IS NULL) OR (NOT all_day AND start_at IS NOT NULL AND end_at >= start_at"
            " AND start_date IS NULL AND end_date IS NULL AND timezone IS NOT NULL)",
            name="ck_events_times"),
        CheckConstraint("(series_id IS NULL) = (recurrence_id IS NULL)", name="ck_events_override"),
        CheckConstraint("series_id IS NULL OR rrule IS NULL", name="ck_events_override_rule"),
        Index("uq_events_user_uid", "user_id", "uid", unique=True, postgresql_where=text("series_id IS NULL")),
        Index("uq_events_series_recurrence", "series_id", "recurrence_id", unique=True,
              postgresql_where=text("series_id IS NOT NULL")),
        Index("ix_events_user_span", "user_id", "span_start"),
        Index("ix_events_caldav_href", "user_id", "caldav_href", postgresql_where=text("caldav_href IS NOT NULL")),
        Index("ix_events_note_id", "note_id", postgresql_where=text("note_id IS NOT NULL")),
        Index("ix_events_project_id", "project_id", postgresql_where=text("project_id IS NOT NULL")),
    )


class EventTombstone(Base):
    """An event deleted here that CalDAV sync had stored on a server (it had a ``caldav_href``):
    what sync must delete there, by ``caldav_href`` and ``etag`` (the version it knew). Sync
    removes the row once the server has forgotten the event too."""

    __tablename__ = "event_tombstones"

    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    uid: Mapped[str] = mapped_column(String(255), nullable=False)
    caldav_href: Mapped[str] = mapped_column(Text, nullable=False)
    etag: Mapped[str | None] = mapped_column(Text)
    deleted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


# --- caldav ----------------------------------------------------------------------------------


class CaldavAccount(Base):
    """A user's CalDAV server (one per user): its URL, the login with the password sealed
    (:mod:`fable_core.infra.sealed`, never returned), the calendar chosen from discovery, the
    sync-collection token of the last pull, and the sync's health: when it last succeeded,
    the last error, how many attempts failed in a row and when the next is due.
    ``claimed_until`` is a running sync's lease: one sync per account at a time, across
    processes (a process that dies lets its lease run out)."""

    __tablename__ = "caldav_accounts"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    url: Mapped[str] = mapped_column(Text, nullable=False)
    username: Mapped[str] = mapped_column(String(200), nullable=False)
    password_sealed: Mapped[str] = mapped_column(Text, nullable=False)
    calendar_href: Mapped[str | None] = mapped_column(Text)
    calendar_name: Mapped[str | None] = mapped_column(String(300))
    sync_token: Mapped[str | None] = mapped_column(Text)
    last_success_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_error: Mapped[str | None] = mapped_column(Text)
    failures: Mapped[int] = mapped_column(Integer, server_default="0", nullable=False)
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(),
                                                      nullable=False)
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (
        Index("ix_caldav_accounts_due", "next_attempt_at", postgresql_where=text("calendar_href IS NOT NULL")),
    )


class EventVersion(Base):
    """The side that lost a both-sides edit (or a local edit the server's deletion overrode),
    kept as it was: ``side`` says whose it was (``local`` or ``server``), ``ical`` is the whole
    VEVENT. Read through ``list_event_versions``."""

    __tablename__ = "event_versions"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    uid: Mapped[str] = mapped_column(String(255), nullable=False)
    side: Mapped[str] = mapped_column(String(8), nullable=False)
    reason: Mapped[str] = mapped_column(String(16), nullable=False)
    title: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    ical: Mapped[str] = mapped_column(Text, nullable=False)
    modified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _created()

    __table_args__ = (
        CheckConstraint("side IN ('local', 'server')", name="ck_event_versions_side"),
        Index("ix_event_versions_user_uid", "user_id", "uid", "id"),
    )


class EventSyncMark(Base):
    """When an event (a series with its changed occurrences, or a single event) was last the
    same here and on the CalDAV server: its ``updated_at`` then. An event with no mark, or
    changed since (its row's or an override's ``updated_at`` later), is pushed by the next sync."""

    __tablename__ = "event_sync_marks"

    event_id: Mapped[int] = mapped_column(ForeignKey("events.id", ondelete="CASCADE"), primary_key=True)
    synced_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


# --- feeds -----------------------------------------------------------------------------------


class Feed(Base):
    """A user's subscription to an RSS or Atom feed: its URL, name and category, the validators
    of the last answer (``etag``, ``last_modified``: sent back as a conditional GET) and the
    refresh's health: when it last succeeded, the last error, how many refreshes failed in a
    row and when the next is due (backing off after failures)."""

    __tablename__ = "feeds"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    url: Mapped[str] = mapped_column(Text, nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    category: Mapped[str] = mapped_column(String(100), server_default="", nullable=False)
    site_url: Mapped[str | None] = mapped_column(Text)
    etag: Mapped[str | None] = mapped_column(Text)
    last_modified: Mapped[str | None] = mapped_column(Text)
    last_success_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_error: Mapped[str | None] = mapped_column(Text)
    failures: Mapped[int] = mapped_column(Integer, server_default="0", nullable=False)
    next_fetch_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(),
                                                    nullable=False)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()

    __table_args__ = (
        UniqueConstraint("user_id", "url", name="uq_feeds_user_url"),
        Index("ix_feeds_next_fetch_at", "next_fetch_at"),
    )


FEED_ITEM_VECTOR_SQL = (
    "setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || "
    "setweight(to_tsvector('english'::regconfig, coalesce(content, '')), 'C')"
)


class FeedItem(Base):
    """One entry of a feed, as text (its HTML stripped: nothing from a feed is ever rendered as
    markup), kept once per ``guid`` (the entry's id, else its link) and pruned to the newest
    per feed. ``published_at`` is the entry's date (its fetch time when it has none);
    ``note_id`` the note it was saved as. ``embedding`` (with ``embedding_model`` and ``dims``)
    is written in the background by the assistant's embedding worker."""

    __tablename__ = "feed_items"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    feed_id: Mapped[int] = mapped_column(ForeignKey("feeds.id", ondelete="CASCADE"), nullable=False)
    user_id: Mapped[int] = _owner()
    guid: Mapped[str] = mapped_column(Text, nullable=False)
    link: Mapped[str | None] = mapped_column(Text)
    title: Mapped[str] = mapped_column(String(500), server_default="", nullable=False)
    content: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    author: Mapped[str | None] = mapped_column(String(200))
    published_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now(),
                                                   nullable=False)
    read_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    note_id: Mapped[int | None] = mapped_column(ForeignKey("notes.id", ondelete="SET NULL"))
    embedding_model: Mapped[str | None] = mapped_column(String(200))
    dims: Mapped[int | None] = mapped_column(Integer)
    embedding: Mapped[Any] = mapped_column(Vector(), nullable=True, deferred=True)
    created_at: Mapped[datetime] = _created()
    # only PostgreSQL reads it (search); never loaded into Python
    search_vector: Mapped[Any] = mapped_column(
        TSVECTOR, Computed(FEED_ITEM_VECTOR_SQL, persisted=True), deferred=True
    )

    __table_args__ = (
        UniqueConstraint("feed_id", "guid", name="uq_feed_items_feed_guid"),
        Index("ix_feed_items_feed_newest", "feed_id", "published_at", "id"),
        Index("ix_feed_items_user_newest", "user_id", "published_at", "id"),
        Index("ix_feed_items_search_vector", "search_vector", postgresql_using="gin"),
    )
class Image(Base):
    """An image a user saved (fetched by ``cache_image`` or uploaded): its bytes live on disk under
    the data dir, named by their SHA-256, and are shared by every row with that hash; one row per
    user and hash, so saving the same image twice gives the same id."""

    __tablename__ = "images"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)  # uq's prefix
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    content_type: Mapped[str] = mapped_column(String(32), nullable=False)
    size: Mapped[int] = mapped_column(Integer, nullable=False)
    source_url: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()

    __table_args__ = (UniqueConstraint("user_id", "sha256", name="uq_images_user_sha256"),)
# --- research ----------------------------------------------------------------------------------


class ResearchRun(Base):
    """One research run: a question researched on the web into linked notes. ``status`` is
    ``running`` (``updated_at`` is its heartbeat) until it ends ``done``, ``error``, ``stopped``
    or ``interrupted`` (its process died: a sweep marks it). ``question_key`` is the question
    normalised: a rerun of the same key updates the notes of the last finished run. ``notes``
    are the notes it wrote (index first), ``sources`` the pages they cite, in citation order.
    One running run per user (a partial unique index)."""

    __tablename__ = "research_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    question: Mapped[str] = mapped_column(Text, nullable=False)
    question_key: Mapped[str] = mapped_column(Text, nullable=False)
    status: Mapped[str] = mapped_column(String(16), server_default="running", nullable=False)
    error: Mapped[str | None] = mapped_column(Text)
    queries: Mapped[list[str] | None] = mapped_column(JSONB)
    sources: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB)
    notes: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB)
    index_note_id: Mapped[int | None] = mapped_column(ForeignKey("notes.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = _updated()
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        CheckConstraint("status IN ('running', 'done', 'error', 'stopped', 'interrupted')",
                        name="ck_research_runs_status"),
        Index("ix_research_runs_user_key", "user_id", "question_key", "id"),
        Index("uq_research_runs_running", "user_id", unique=True, postgresql_where=text("status = 'running'")),
    )
# --- imports -----------------------------------------------------------------------------------


class ImportedItem(Base):
    """Where an imported note or conversation came from: its ``source`` (``obsidian``,
    ``basic_memory``, ``chatgpt``, ``claude``) and its key there (the vault-relative path, the
    conversation id). Re-running an import skips the keys it already imported while their item
    still exists, so nothing is imported twice."""

    __tablename__ = "imported_items"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)  # uq's prefix
    source: Mapped[str] = mapped_column(String(16), nullable=False)
    source_key: Mapped[str] = mapped_column(Text, nullable=False)
    item_kind: Mapped[str] = mapped_column(String(16), nullable=False)
    item_id: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = _created()

    __table_args__ = (
        UniqueConstraint("user_id", "source", "source_key", name="uq_imported_items_key"),
        CheckConstraint("item_kind IN ('note', 'conversation')", name="ck_imported_items_kind"),
    )


class UserIdentity(Base):
    """An account's identity at an OpenID Connect provider: the provider's ``iss`` and the
    ``sub`` it gives the person, which never changes (an email may). Sign-in finds the
    account by this pair (:mod:`fable_core.identity.oidc`)."""

    __tablename__ = "user_identities"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    issuer: Mapped[str] = mapped_column(String(300), nullable=False)
    subject: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = _created()

    __table_args__ = (UniqueConstraint("issuer", "subject", name="uq_user_identities_issuer_subject"),)


# --- drafts ------------------------------------------------------------------------------------


class EditDraft(Base):
    """A person's unsaved edit of a note (``note_id``), or of a note not created yet (``note_id``
    null), saved while they type so that nothing is lost; one per person and note, private to its
    writer, deleted when they save the note. ``base_version`` is the version the edit started from."""

    __tablename__ = "edit_drafts"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    note_id: Mapped[int | None] = mapped_column(ForeignKey("notes.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    body: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    tags: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default="{}", nullable=False)
    base_version: Mapped[int | None] = mapped_column(Integer)
    updated_at: Mapped[datetime] = _updated()


# one draft per person and note, the new note's (null) included
Index("uq_edit_drafts_user_note", EditDraft.user_id, func.coalesce(EditDraft.note_id, 0), unique=True)


class OAuthClient(Base):
    """An OAuth client Fable's authorization server knows: registered by itself (RFC 7591
    dynamic registration) or named by the URL of its metadata document (``client_id``), public
    (PKCE, no secret), with the exact redirect URIs it may use.
    An admin may disable one: its tokens stop working and it can get no new ones."""

    __tablename__ = "oauth_clients"

    id: Mapped[int] = mapped_column(primary_key=True)
    client_id: Mapped[str] = mapped_column(String(2000), unique=True, nullable=False)  # or a document's URL
    client_name: Mapped[str] = mapped_column(String(200), nullable=False)
    redirect_uris: Mapped[list[str]] = mapped_column(ARRAY(Text), nullable=False)
    client_uri: Mapped[str | None] = mapped_column(Text)
    software: Mapped[str | None] = mapped_column(String(200))
    registered_ip: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = _created()
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class OAuthGrant(Base):
    """A person's approval of a client (a "connection"): what it may do (``read`` or ``write``).
    The consent page is skipped while one covers what the client asks; revoking it (deleting
    the row) ends every code and token issued under it."""

    __tablename__ = "oauth_grants"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = _owner()
    client_ref: Mapped[int] = mapped_column(ForeignKey("oauth_clients.id", ondelete="CASCADE"), nullable=False,
                                            index=True)
    scope: Mapped[str] = mapped_column(String(8), nullable=False)
    created_at: Mapped[datetime] = _created()
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    toolsets: Mapped[list[str] | None] = mapped_column(ARRAY(Text))  # its MCP offer; null: the server's

    __table_args__ = (
        UniqueConstraint("user_id", "client_ref", name="uq_oauth_grants_user_client"),
        CheckConstraint("scope IN ('read', 'write')", name="ck_oauth_grants_scope"),
    )


class OAuthCode(Base):
    """An authorization code (stored as its SHA-256): single use, short-lived, bound to the
    redirect URI, the PKCE challenge (S256) and the resource it was asked for. ``family`` names
    the tokens it was exchanged for, which a replay of the code revokes."""

    __tablename__ = "oauth_codes"

    id: Mapped[int] = mapped_column(primary_key=True)
    grant_id: Mapped[int] = mapped_column(ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=False,
                                          index=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    family: Mapped[str] = mapped_column(String(32), nullable=False)
    redirect_uri: Mapped[str] = mapped_column(Text, nullable=False)
    code_challenge: Mapped[str] = mapped_column(String(128), nullable=False)
    scope: Mapped[str] = mapped_column(String(8), nullable=False)
    resource: Mapped[str] = mapped_column(Text, nullable=False)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class OAuthToken(Base):
    """An access or refresh token (stored as its SHA-256), bound to one resource. A refresh
    token is used once (``used_at``) and replaced by a new one in the same ``family``; using
    it again revokes the whole family (reuse detection)."""

    __tablename__ = "oauth_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    grant_id: Mapped[int] = mapped_column(ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=False,
                                          index=True)
    kind: Mapped[str] = mapped_column(String(8), nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    family: Mapped[str] = mapped_column(String(32), nullable=False, index=True)
    scope: Mapped[str] = mapped_column(String(8), nullable=False)
    resource: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (CheckConstraint("kind IN ('access', 'refresh')", name="ck_oauth_tokens_kind"),)


class TrashedNote(Base):
    """A deleted note waiting in its owner's trash (:mod:`fable_core.knowledge.trash`): ``id`` is the note's
    own, ``data`` holds its row, versions and work log as JSON (``note``, ``versions``, ``logs``)
    to restore it with that id. Purged ``FABLE_TRASH_DAYS`` after ``deleted_at``."""

    __tablename__ = "trashed_notes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = _owner()
    title: Mapped[str] = mapped_column(String(300), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    deleted_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    deleted_at: Mapped[datetime] = _created()
    data: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)

    __table_args__ = (Index("ix_trashed_notes_deleted", "user_id", "deleted_at", "id"),)


class JobRun(Base):
    """The last due time a scheduled job ran for (:mod:`fable_core.tools.jobs`), on whichever process:
    the others skip that due time."""

    __tablename__ = "job_runs"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    due: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    finished_at: Mapped[datetime] = _created()


class McpSession(Base):
    """A 2025 MCP session open on one replica (:mod:`fable_mcp.session_routes`): the others forward
    its requests to ``replica``. Only a hash of the session id is kept; ``key_hash`` is the
    credential that opened it (:attr:`fable_mcp.identity.Credential.key`). ``seen_at`` is the
    owner's last heartbeat: rows of a replica that stopped beating are pruned."""

    __tablename__ = "mcp_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    replica: Mapped[str] = mapped_column(Text, nullable=False, index=True)
    key_hash: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    created_at: Mapped[datetime] = _created()
    seen_at: Mapped[datetime] = _created()


class RecentWrite(Base):
    """When each user last wrote, for read replicas (:mod:`fable_core.db.replica`): their reads stay
    on the primary for ``FABLE_READ_YOUR_WRITES_SECONDS`` after. Written only when
    ``DATABASE_READ_URL`` is set, in the writing transaction; UNLOGGED (no WAL, not replicated:
    only the primary reads it; a crash empties it, which costs at most one window)."""

    __tablename__ = "recent_writes"
    __table_args__ = ({"prefixes": ["UNLOGGED"]},)

    writer_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    written_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class Generation(Base):
    """A generation (a chat answer) running or just finished on some Fable process
    (:mod:`fable_core.infra.shared_generations`): one per key, claimed before it starts (so
    two processes never run one conversation's answer at once), beaten every second by the
    process running it (``claim`` names that process and claim), ``done`` once its last event
    is stored; ``stop_requested`` asks the running process to stop it. Transient: deleted a
    minute after it ends."""

    __tablename__ = "generations"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    claim: Mapped[str] = mapped_column(String(40), nullable=False)
    message_id: Mapped[int | None] = mapped_column(BigInteger)  # None while it is starting
    owner: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))  # whose answer
    heartbeat: Mapped[datetime] = _created()
    done: Mapped[bool] = mapped_column(nullable=False, server_default=text("false"))
    stop_requested: Mapped[bool] = mapped_column(nullable=False, server_default=text("false"))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class GenerationEvent(Base):
    """One event of a generation, as its followers on any process replay it: ``seq`` is the
    ``n`` of its id ``<message id>:<n>``. Written in batches by the running process; deleted
    with the generation's row, or when the key's next generation starts."""

    __tablename__ = "generation_events"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    message_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    event: Mapped[str] = mapped_column(String(40), nullable=False)
    data: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    at: Mapped[datetime] = _created()


# --- embeddings the worker gave up ---------------------------------------------------------------------


class EmbeddingFailure(Base):
    """A note or feed item whose embedding write lost its database backend while it was written
    alone (:class:`~fable_core.assistant.embeddings.EmbeddingWorker`): after ``crashes`` reaches
    the worker's bound it is left unembedded under ``model`` until its text changes (a note saved
    after ``last_at``) or the model does; admins see the give-up in the error log."""

    __tablename__ = "embedding_failures"
    __table_args__ = (CheckConstraint("(note_id IS NULL) <> (feed_item_id IS NULL)", name="ck_embedding_failures_one"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    note_id: Mapped[int | None] = mapped_column(ForeignKey("notes.id", ondelete="CASCADE"), unique=True)
    feed_item_id: Mapped[int | None] = mapped_column(BigInteger, ForeignKey("feed_items.id", ondelete="CASCADE"),
                                                     unique=True)
    model: Mapped[str] = mapped_column(String(200), nullable=False)
    crashes: Mapped[int] = mapped_column(Integer, nullable=False)
    error: Mapped[str] = mapped_column(Text, server_default="", nullable=False)
    last_at: Mapped[datetime] = _created()
