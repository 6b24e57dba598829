"""One line at start when the configured mail server does not answer (issue 37: a missing
service is said when Fable starts, not first found out by an invitation that never arrives).

Only a TCP connection is tried (no SMTP dialogue, no credentials sent): whether anything listens
where ``SMTP_HOST`` or Settings → Mail says. What a server then answers is for the test mail in
Settings to show.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from fable_core.admin.mail_settings import mail_server
from fable_core.errors import FableError

if TYPE_CHECKING:
    from fable_core.tools.runtime import Closer, Runtime

__all__ = ["install"]

_log = logging.getLogger(__name__)
CONNECT_TIMEOUT = 5.0


async def install(fable: Runtime) -> Closer:
    """Look, in the background, whether the mail server answers."""
    probe = asyncio.get_running_loop().create_task(_say_if_unreachable(fable), name="fable-mail-probe")

    async def close() -> None:
        probe.cancel()
        await asyncio.gather(probe, return_exceptions=True)

    return close


async def _say_if_unreachable(fable: Runtime) -> None:
    try:
        async with fable.db.reading() as session:
            server = await mail_server(session, fable.settings)
    except FableError:  # the database says so itself
        return
    if server is None:
        return
    where = "SMTP_HOST" if server.source == "environment" else "Settings → Mail"
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT):
            _, writer = await asyncio.open_connection(server.host, server.port)
    except (OSError, TimeoutError) as e:
        _log.warning("the mail server at %s:%s (%s) does not answer (%s): invitations, password resets and mail "
                     "notifications wait for it; check %s", server.host, server.port, where,
                     type(e).__name__, where)
        return
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
