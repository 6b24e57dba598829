"""The one boundary where database errors become domain errors."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, IntegrityError

from fable_core.errors import Conflict, FableError, InvalidInput, NotFound, Unavailable

__all__ = ["translate_db_error"]


def translate_db_error(exc: DBAPIError) -> FableError:
    """Map a driver error to the domain error a caller can act on."""
    orig = getattr(exc, "orig", None)
    sqlstate = getattr(orig, "sqlstate", None) or getattr(getattr(orig, "__cause__", None), "sqlstate", None)
    detail = str(orig).splitlines()[-1] if orig else str(exc)
    if isinstance(exc, IntegrityError):
        if sqlstate == "23505":
            return Conflict(f"already exists: {detail}")
        if sqlstate == "23503":
            return NotFound(f"a referenced row does not exist: {detail}")
        return InvalidInput(f"constraint violated: {detail}")
    if sqlstate and sqlstate.startswith("22"):
        return InvalidInput(f"invalid value: {detail}")
    if sqlstate and sqlstate.startswith(("08", "57")):
        return Unavailable(f"database unavailable: {detail}")
    return Unavailable(f"database error: {detail}")
