"""The one boundary where database errors become domain errors."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from fable_core.errors import Conflict, FableError, InvalidInput, NotFound, Unavailable

__all__ = ["backend_died", "connection_lost", "log_db_error", "log_once", "translate_db_error",
           "translated_db_errors", "unwritable"]

_log = logging.getLogger(__name__)

# asyncpg's own refusal of a parameter ("invalid input for query argument $2: 3000000000 (value out of
# int32 range)"): said to clients without the statement's internals
_ARGUMENT = re.compile(r"invalid input for query argument \$\d+: (?P<value>.*?)(?: \((?P<why>[^()]*)\))?$")


@contextmanager
def translated_db_errors(lost: Callable[[], None] | None = None,
                         cannot_write: Callable[[str], None] | None = None) -> Iterator[None]:
    """Raise driver errors, an unreachable server and an exhausted pool as domain errors;
    ``lost`` is called when the error says the server could not be reached or went away,
    ``cannot_write`` (with why) when it says the server cannot write at all (a full disk)."""
    try:
        yield
    except DBAPIError as e:
        if lost is not None and connection_lost(e):
            lost()
        if cannot_write is not None and (why := unwritable(e)) is not None:
            cannot_write(why)
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


# SQLSTATEs that say the server cannot write at all (not this statement's fault): a full disk,
# out of memory or files, an I/O error, a read-only server (a standby, a read-only transaction)
_UNWRITABLE = {"53100": "its disk is full", "53200": "it is out of memory", "53000": "it is out of resources",
               "53300": "it has too many connections", "58030": "its disk failed (an I/O error)",
               "25006": "it is read-only"}


def unwritable(exc: DBAPIError) -> str | None:
    """Why the server cannot write, when ``exc`` says it cannot (else None)."""
    sqlstate = _sqlstate(exc) or ""
    return _UNWRITABLE.get(sqlstate) or (_UNWRITABLE["53000"] if sqlstate.startswith("53") else None)


def translate_db_error(exc: DBAPIError) -> FableError:
    """Map a driver error to the domain error a caller can act on, in words of its own: the
    server's message (table and constraint names, file paths) stays in the log
    (:func:`log_db_error`), never reaches a client."""
    orig = getattr(exc, "orig", None)
    sqlstate = _sqlstate(exc)
    detail = str(orig).splitlines()[-1] if orig else str(exc)
    if isinstance(exc, IntegrityError):
        log_db_error(sqlstate, detail, level=logging.INFO)  # a race a check before it lost: expected
        if sqlstate == "23505":
            return Conflict("already exists (another request made it at the same moment): nothing was changed")
        if sqlstate == "23503":
            return NotFound("a referenced row does not exist (it was deleted meanwhile): nothing was changed")
        return InvalidInput("a value breaks a rule of the stored data: nothing was changed")
    if (argument := _ARGUMENT.match(detail)) is not None:  # refused by the driver, before the server
        why = "out of range" if "range" in (argument["why"] or "") else "of the wrong kind"
        return InvalidInput(f"invalid value {argument['value'][:100]}: {why}")
    if sqlstate and sqlstate.startswith("22"):  # the value's fault, said by type ("value too long for type …")
        return InvalidInput(f"invalid value: {detail}")
    log_db_error(sqlstate, detail)
    if (cannot := unwritable(exc)) is not None:
        return Unavailable(f"the database cannot write: {cannot}; nothing was written")
    if sqlstate == "57014":
        return Unavailable("the database took too long: the statement was cancelled")
    if (sqlstate and sqlstate.startswith(("08", "57"))) or connection_lost(exc):
        return Unavailable("database unavailable: the server could not be reached or went away")
    return Unavailable("database error: the server refused the statement (logged)")


_SAY_EVERY = 60.0  # seconds: one log line per distinct error per interval
_said: dict[tuple[str, str], list[float]] = {}  # (logger, message) → [said at, repeats since]


def log_once(logger: logging.Logger, level: int, message: str, *, stacklevel: int = 2,
             every: float = _SAY_EVERY) -> None:
    """Log ``message`` once per minute at most, with how many times it recurred meanwhile: an
    outage fails every statement and every retry, and 768 tracebacks say no more than one line
    with a count."""
    key = (logger.name, message[:200])
    now = time.monotonic()
    said = _said.get(key)
    if said is not None and now - said[0] < every:
        said[1] += 1
        return
    repeats = (f" (and {int(said[1])} more like it since {now - said[0]:.0f} s ago)"
               if said is not None and said[1] else "")
    if len(_said) > 1000:  # distinct messages without end (values in them): forget the old ones
        _said.clear()
    _said[key] = [now, 0]
    logger.log(level, "%s%s", message, repeats, stacklevel=stacklevel)


def log_db_error(sqlstate: str | None, detail: str, *, level: int = logging.WARNING) -> None:
    """Log a database error as the server said it (the log keeps what clients are not told),
    once per distinct error per minute (:func:`log_once`)."""
    log_once(_log, level, f"database error {sqlstate or '-'}: {detail}", stacklevel=3)


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
