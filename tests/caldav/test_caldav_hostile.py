"""A CalDAV server's answers are input like any other: one that names a calendar on another host
(an absolute href elsewhere) is refused with a clear error, never a 500 (security round 3)."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support.servers import serve_in_thread

from fable_core.errors import Unavailable
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

ELSEWHERE = """<?xml version="1.0" encoding="utf-8"?>
<d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
 <d:response><d:href>http://elsewhere.example/cal/</d:href>
  <d:propstat><d:prop>
   <d:current-user-principal><d:href>http://elsewhere.example/principal/</d:href></d:current-user-principal>
   <c:calendar-home-set><d:href>http://elsewhere.example/cal/</d:href></c:calendar-home-set>
   <d:resourcetype><d:collection/><c:calendar/></d:resourcetype>
   <d:displayname>Elsewhere</d:displayname>
  </d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>
 </d:response>
</d:multistatus>"""


async def dav(request: Request) -> Response:
    if request.method == "OPTIONS":
        return Response(headers={"DAV": "1, 2, calendar-access", "Allow": "OPTIONS, PROPFIND, REPORT"})
    return Response(ELSEWHERE, status_code=207, media_type="application/xml")


async def test_a_server_naming_calendars_on_another_host_is_refused_clearly(fable: Fable, alice: Caller) -> None:
    app = Starlette(routes=[Route("/{path:path}", dav, methods=["OPTIONS", "PROPFIND", "REPORT", "GET"])])
    with serve_in_thread(app) as url:
        allowed = Fable(fable.settings.model_copy(update={"fable_caldav_allow_hosts": [url.removeprefix("http://")]}),
                        fable.db)
        with pytest.raises(Unavailable, match="answered"):
            await allowed.call("connect_caldav", {"url": f"{url}/dav/", "username": "ana", "password": "secret"},
                               alice)
