"""How Alembic sees Fable's schema: where the migrations live and what the models comparison skips.

The migrations ship inside the package (``fable_core/db/alembic/``: ``env.py``, ``versions/``), so
an installed Fable upgrades its database without the source tree. ``env.py``,
``Database.upgrade`` and the schema tests all use these, so that ``alembic check`` (models vs.
database) means the same thing everywhere.

Every start upgrades; almost every start finds the schema current. That is known from the
``alembic_version`` row and the newest migration's file name (revisions are numbered as their
files are: ``0044_task_assignees.py`` is ``0044``), without Alembic, which a start would
otherwise import and have read every migration: about 0.2 s of ``fable mcp``'s start.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import Connection

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["ALEMBIC_DIR", "COMPARE_OPTIONS", "Migration", "alembic_config", "current_revision", "head_revision",
           "include_object", "upgrade_to_head", "vectors_run"]

ALEMBIC_DIR = Path(__file__).resolve().parent / "alembic"

# Objects the database has on purpose but the models cannot declare, each with its reason.
# Keep this list short and specific: everything else must match the models exactly.
_UNMODELLED_INDEXES = {
    # partial HNSW expression indexes, one per embedding dimension, created by migration 0003
    # (768) and at run time for other models; see fable_core.db.models.NoteEmbedding
    re.compile(r"^ix_note_embeddings_hnsw_\d+$"),
}


# Tables of the database's own machinery, made outside the migrations (like alembic_version)
_UNMODELLED_TABLES = {
    "vector_checks",  # the vector extension's self-test verdicts, needed before any migration (db/vectors.py)
}


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Alembic's filter: skip only the unmodelled objects above, and only as found in the database."""
    if type_ == "index" and reflected and compare_to is None and name:
        return not any(pattern.match(name) for pattern in _UNMODELLED_INDEXES)
    if type_ == "table" and reflected and compare_to is None:
        return name not in _UNMODELLED_TABLES
    return True


COMPARE_OPTIONS: dict[str, Any] = {
    "compare_type": True,
    "compare_server_default": True,
    "include_object": include_object,
}


def alembic_config(connection: object | None = None) -> Config:
    """An Alembic config for our migrations; with ``connection``, env.py runs on it."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(ALEMBIC_DIR))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


class Migration(NamedTuple):
    """One migration: its revision id and the first line of its docstring."""

    revision: str
    description: str


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at (None before the first migration)."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def vectors_run() -> bool:
    """In a migration: whether pgvector runs on this server (the self-test's verdict, which
    ``Database.upgrade`` passes; true when Alembic is run by hand). Where it does not, the
    migrations make the stand-in ``vector`` type and no vector index."""
    from alembic import op

    return bool(op.get_context().config.attributes.get("vectors_run", True))  # type: ignore[union-attr]


def head_revision() -> str:
    """The newest migration's revision, from the file names (``tests/core/test_migrations.py``
    holds that Alembic's head is the same)."""
    return max(p.name.split("_", 1)[0] for p in (ALEMBIC_DIR / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def _current(connection: Connection) -> bool:
    """Whether the schema is at the newest migration, read without Alembic."""
    if connection.exec_driver_sql("SELECT to_regclass('alembic_version')").scalar() is None:
        return False
    return connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == head_revision()


def upgrade_to_head(connection: Connection, *, vectors: bool = True) -> list[Migration]:
    """Apply the pending migrations on ``connection`` (in its transaction); returns those it
    applied, oldest first (none when the schema is current). ``vectors``: whether pgvector runs
    here (:func:`vectors_run`)."""
    if _current(connection):
        return []
    from alembic import command
    from alembic.script import ScriptDirectory

    config = alembic_config(connection)
    config.attributes["vectors_run"] = vectors
    before = current_revision(connection)
    command.upgrade(config, "head")
    after = current_revision(connection)
    if after == before:
        return []
    script = ScriptDirectory.from_config(config)
    applied = reversed(list(script.iterate_revisions(after, before)))
    return [Migration(r.revision, (r.doc or "").strip().splitlines()[0] if r.doc else "") for r in applied]
