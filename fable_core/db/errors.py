"""The one boundary where database errors become domain errors."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from fable_core.errors import Conflict, FableError, InvalidInput, NotFound, Unavailable

__all__ = ["backend_died", "connection_lost", "translate_db_error", "translated_db_errors"]

# asyncpg's own refusal of a parameter ("invalid input for query argument $2: 3000000000 (value out of
# int32 range)"): said to clients without the statement's internals
_ARGUMENT = re.compile(r"invalid input for query argument \$\d+: (?P<value>.*?)(?: \((?P<why>[^()]*)\))?$")


@contextmanager
def translated_db_errors(lost: Callable[[], None] | None = None) -> Iterator[None]:
    """Raise driver errors, an unreachable server and an exhausted pool as domain errors;
    ``lost`` is called when the error says the server could not be reached or went away."""
    try:
        yield
    except DBAPIError as e:
        if lost is not None and connection_lost(e):
            lost()
        raise translate_db_error(e) from e
    except PoolTimeout as e:
        raise Unavailable("the database is busy: no connection became free in time") from e
    except OSError as e:  # refused, reset, the embedded server's socket gone
        if lost is not None:
            lost()
        raise Unavailable(f"database unavailable: {type(e).__name__}") from e


def _sqlstate(exc: DBAPIError) -> str | None:
    orig = getattr(exc, "orig", None)
    return getattr(orig, "sqlstate", None) or getattr(getattr(orig, "__cause__", None), "sqlstate", None)


def connection_lost(exc: DBAPIError) -> bool:
    """Whether ``exc`` says the server could not be reached or dropped the connection (it shut
    down, restarted, refused new sessions, or the socket closed): an outage, not the statement's
    fault."""
    sqlstate = _sqlstate(exc)
    return bool(sqlstate and sqlstate.startswith(("08", "57P"))) or backend_died(exc) or (
        exc.connection_invalidated or "connection is closed" in str(exc.orig))


def translate_db_error(exc: DBAPIError) -> FableError:
    """Map a driver error to the domain error a caller can act on."""
    orig = getattr(exc, "orig", None)
    sqlstate = _sqlstate(exc)
    detail = str(orig).splitlines()[-1] if orig else str(exc)
    if isinstance(exc, IntegrityError):
        if sqlstate == "23505":
            return Conflict(f"already exists: {detail}")
        if sqlstate == "23503":
            return NotFound(f"a referenced row does not exist: {detail}")
        return InvalidInput(f"constraint violated: {detail}")
    if (argument := _ARGUMENT.match(detail)) is not None:  # refused by the driver, before the server
        why = "out of range" if "range" in (argument["why"] or "") else "of the wrong kind"
        return InvalidInput(f"invalid value {argument['value'][:100]}: {why}")
    if sqlstate and sqlstate.startswith("22"):
        return InvalidInput(f"invalid value: {detail}")
    if (sqlstate and sqlstate.startswith(("08", "57"))) or connection_lost(exc):
        return Unavailable(f"database unavailable: {detail}")
    return Unavailable(f"database error: {detail}")


def backend_died(exc: BaseException) -> bool:
    """Whether ``exc`` (a driver error, or a domain error raised from one) is the connection
    closing under a statement with no word from the server: the backend running it died (a
    crash, SIGILL from an extension built for another CPU, the OOM killer). A server that shuts
    down or restarts after *another* backend's crash says so first (SQLSTATE 57P01, 57P02):
    that is an outage, not this statement's doing."""
    pending: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if type(current).__name__ == "ConnectionDoesNotExistError":  # asyncpg's, however wrapped
            return True
        pending += [getattr(current, "orig", None), current.__cause__, current.__context__]
    return False
