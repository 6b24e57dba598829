"""docs/api.md's curl session runs, top to bottom, on a fresh instance.

The ```sh block under "Examples with curl" is run as it is by bash, with real curl, against a
real uvicorn on 127.0.0.1 serving the app on the (emptied) test database; only ``BASE`` is
pointed at that server. A ``curl`` function put in front of it records each request's status,
method, URL and answer (the real curl does the request), so every step is checked, not just
the last one, and ``set -euo pipefail`` stops at the first command that fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from support.pace import scaled
from support.servers import serve

from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from fable_web.app import create_app

ROOT = Path(__file__).resolve().parents[2]
BASE_LINE = "BASE=http://127.0.0.1:8000\n"

# Each request: its answer's line in $CURL_LOG (status, method, URL, body), the body on stdout.
RECORDER = r"""
set -euo pipefail
curl() {
  local body written
  body=$(mktemp)
  written=$(command curl -o "$body" -w '%{http_code}\t%{method}\t%{url_effective}' "$@")
  printf '%s\t%s\n' "$written" "$(tr -d '\n' < "$body")" >> "$CURL_LOG"
  cat "$body"
  rm -f "$body"
}
"""


def session_block() -> str:
    text = (ROOT / "docs/api.md").read_text()
    section = text[text.index("## Examples with curl"):text.index("## Routes")]
    [block] = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block.startswith(BASE_LINE)
    return block


async def run_session(base_url: str, workdir: Path) -> list[tuple[int, str, str, Any]]:
    log = workdir / "curl.log"
    script = RECORDER + session_block().replace(BASE_LINE, f"BASE={base_url}\n", 1)
    bash = shutil.which("bash")
    assert bash and shutil.which("curl") and shutil.which("python3"), "the session needs bash, curl and python3"
    proc = await asyncio.create_subprocess_exec(
        bash, "-c", script, cwd=workdir, env={"PATH": os.environ["PATH"], "HOME": str(workdir), "CURL_LOG": str(log)},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(scaled(120)):
        out, err = await proc.communicate()
    assert proc.returncode == 0, f"the session stopped:\n{err.decode()}\n{out.decode()[-2000:]}"
    steps = []
    for line in log.read_text().splitlines():
        status, method, url, body = line.split("\t", 3)
        path = re.sub(r"/\d+(?=/|$)", "/{id}", url.removeprefix(base_url))
        steps.append((int(status), method, re.sub(r"cursor=[\w-]+", "cursor={cursor}", path), json.loads(body)))
    return steps


async def test_the_curl_session_in_api_md_runs_on_a_fresh_instance(fable: Fable, tmp_path: Path) -> None:
    async with serve(create_app(fable)) as url:
        steps = await run_session(url, tmp_path)
    open_tasks = "/api/notes?kind=task&status=todo,in_progress&limit=1"
    assert [step[:3] for step in steps] == [
        (201, "POST", "/api/auth/register"),
        (201, "POST", "/api/api-keys"),
        (200, "POST", "/api/notes"),
        (200, "POST", "/api/notes"),
        (200, "POST", "/api/notes"),
        (200, "GET", open_tasks),
        (200, "GET", f"{open_tasks}&cursor={{cursor}}"),
        (200, "GET", "/api/notes/{id}"),
        (200, "PATCH", "/api/notes/{id}"),
        (200, "POST", "/api/tasks/{id}/complete"),
        (200, "POST", "/api/tools/search_notes"),
        (200, "DELETE", "/api/notes/{id}"),
        (422, "POST", "/api/notes"),
    ]
    answers = [step[3] for step in steps]
    assert answers[0]["user"]["role"] == "admin"
    note, task, sweep = answers[2]["id"], answers[3]["id"], answers[4]["id"]
    first, second = answers[5], answers[6]
    assert first["next_cursor"] and len(first["items"]) == len(second["items"]) == 1
    assert {first["items"][0]["id"], second["items"][0]["id"]} == {task, sweep}  # the two pages: both open tasks
    assert answers[7]["id"] == note and answers[8]["tags"] == ["home", "errands"]
    assert answers[9]["task"] == answers[9]["task"] | {"id": task, "status": "done"}
    assert [hit["id"] for hit in answers[10]["items"]] == [note]
    assert answers[11] == {"id": note, "deleted": True}
    error = answers[12]["error"]
    # the answer the session quotes is the one given (issue 37 item 12: it had gone stale)
    quote = re.compile(r'^# \{"error":\{"type":"invalid_input","message":"(.*)",\.\.\.\}\}$', re.MULTILINE)
    [quoted] = quote.findall(session_block())
    assert error["type"] == "invalid_input" and error["message"] == quoted

    ada = Caller(user_id=answers[0]["user"]["id"], username="ada", role="admin", surface="internal")
    left = {n["title"]: n["status"] for n in (await fable.call("list_notes", {}, ada))["items"]}
    assert left == {"Call the plumber": "done", "Book the chimney sweep": "todo"}  # the 422 created nothing
