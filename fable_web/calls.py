"""``fable call TOOL JSON``: one tool call from the shell, through the dispatcher.

The result goes to stdout as JSON (a binary result as its bytes: ``--output FILE``, else stdout;
``--input FILE`` gives a tool's binary argument). A stream tool's progress goes to stderr as it
comes: an answer's tokens as its text, any other item as one line ``<event>: <json>``.

A tool that starts work going on after it returns (``@tool(followed_by=...)``: a chat answer, a
research run) would leave that work in this process, which ends when the command does. So the
call waits for it: the tool its :class:`~fable_core.tools.registry.Follow` names follows the work
through the same dispatcher, its progress on stderr, and stdout gets the tool's result completed
by the follow tool's (the answer, the finished run). The exit status is 1 when the work ended
otherwise than done (failed, cut off, stopped elsewhere), 130 after Ctrl-C, which stops the work
with the follow's stop tool, says so, and prints what was kept. ``--no-wait`` on such a tool is
refused before anything starts: what it started would end with this process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import sys
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from fable_core.errors import InvalidInput
from fable_core.tools.binary import Blob, Download
from fable_core.tools.compact import compact

if TYPE_CHECKING:

    from fable_core.runtime import Fable
    from fable_core.tools.caller import Caller
    from fable_core.tools.progress import Progress
    from fable_core.tools.registry import Follow, Tool

__all__ = ["LINE", "Shown", "call", "read_arguments", "refuse_no_wait"]

LINE = 300  # characters of a progress item's line on stderr (a tool result can be a page)
_NO_WAIT = ("{tool} starts work that goes on after it returns, and `fable call` runs that work in its own "
            "process, which would end it: --no-wait is refused and nothing was started. Leave out --no-wait to "
            "wait for it here (Ctrl-C stops it), or start it where it outlives the call (the web app, REST, MCP) "
            "and follow it from here with `fable call {follow} ...`")


def read_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The call's arguments: a JSON object, from the command line or stdin (``-``)."""
    raw = sys.stdin.read() if args.arguments == "-" else args.arguments
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InvalidInput(f"arguments are not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    if not isinstance(arguments, dict):
        raise InvalidInput("arguments must be a JSON object, e.g. '{\"title\": \"Groceries\"}'")
    return arguments


async def call(fable: Fable, args: argparse.Namespace, arguments: dict[str, Any], caller: Caller) -> int:
    """Run ``args.tool`` as ``caller``, print its result, and wait for the work it starts."""
    t = fable.dispatcher.tool(args.tool)
    binary = t.signature.binary_param
    if args.input is not None:
        if binary is None:
            raise InvalidInput(f"{t.name} takes no binary argument; leave out --input")
        arguments[binary] = _zip_folder(args.input) if args.input.is_dir() else args.input.read_bytes()
    shown = Shown(sys.stderr)
    if t.followed_by is not None:
        return await _wait_for(fable, t, t.followed_by, arguments, caller, shown)
    result = await fable.dispatcher.run(t.name, arguments, caller, progress=shown if t.stream else None)
    shown.end_line()
    if isinstance(result, Download):
        await _write_download(result, args.output)
    elif isinstance(result, Blob):
        _write_blob(result, args.output)
    else:
        _print_json(result.model_dump(mode="json"))
    return 0


def refuse_no_wait(t: Tool) -> None:
    """``--no-wait`` on a tool that starts work: refused before anything starts (module doc)."""
    if t.followed_by is not None:
        raise InvalidInput(_NO_WAIT.format(tool=t.name, follow=t.followed_by.tool), field="no_wait")


async def _wait_for(fable: Fable, t: Tool, follow: Follow, arguments: dict[str, Any], caller: Caller,
                    shown: Shown) -> int:
    """Run ``t`` so that it returns once its work is started (``at_once``), then follow the work
    to its end; Ctrl-C stops it. Its result completed by the follow tool's goes to stdout."""
    started = await fable.dispatcher.run(t.name, arguments | dict(follow.at_once), caller)
    ended, status = started, 0
    if follow.pending(started):
        on = follow.arguments_of(started)
        print(f"waiting for the work {t.name} started ({_command(follow.tool, on)} follows it too); "
              "Ctrl-C stops it", file=sys.stderr, flush=True)
        try:
            ended = await fable.dispatcher.run(follow.tool, on, caller, progress=shown)
        except asyncio.CancelledError:  # Ctrl-C: stop the work rather than leave it to die with the process
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            shown.end_line()
            print(f"stopping it ({_command(follow.stop, on)}) ...", file=sys.stderr, flush=True)
            await fable.dispatcher.run(follow.stop, on, caller)
            ended = await fable.dispatcher.run(follow.tool, on, caller)  # its end, as stored
            print(f"stopped: the work {t.name} started ended {getattr(ended, follow.status)!s}; what it kept is on "
                  "stdout", file=sys.stderr)
            status = 130
    shown.end_line()
    _print_json(started.model_dump(mode="json") | ended.model_dump(mode="json"))
    if status == 0 and not follow.ended_well(ended):
        state = getattr(ended, follow.status)
        print(f"error: {state}: {getattr(ended, 'error', None) or f'the work {t.name} started ended {state}'}",
              file=sys.stderr)
        status = 1
    return status


def _command(tool: str, arguments: dict[str, Any]) -> str:
    return f"fable call {tool} '{json.dumps(arguments)}'"


def _print_json(data: dict[str, Any]) -> None:
    print(json.dumps(compact(data), indent=2, ensure_ascii=False))


class Shown:
    """A stream tool's progress on a terminal (stderr) as it comes: the text of ``token`` items
    as it is written, any other item on a line of its own, ``<event>: <json>`` cut at :data:`LINE`."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._mid_line = False

    async def __call__(self, item: Progress) -> None:
        text = item.data.get("text")
        if item.event == "token" and isinstance(text, str):
            self.out.write(text)
            self._mid_line = not text.endswith("\n")
        else:
            self.end_line()
            line = f"{item.event}: {json.dumps(item.data, ensure_ascii=False, default=str)}"
            self.out.write((line if len(line) <= LINE else line[:LINE - 1] + "…") + "\n")
        self.out.flush()

    def end_line(self) -> None:
        """End the line an answer's text left open, so that what follows starts on its own."""
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False


def _zip_folder(folder: Path) -> bytes:
    """A folder's files as a ZIP, paths relative to it (links are not followed out of it)."""
    buffer = io.BytesIO()
    root = folder.resolve()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.resolve().is_relative_to(root):
                archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


def _write_blob(blob: Blob, output: Path | None) -> None:
    if output is not None:
        output.write_bytes(blob.content)
        print(json.dumps({"content_type": blob.content_type, "bytes": len(blob.content), "output": str(output)}))
    else:
        sys.stdout.buffer.write(blob.content)
        sys.stdout.buffer.flush()


async def _write_download(download: Download, output: Path | None) -> None:
    """The chunks written as they come: to ``output`` (then its description), else to stdout."""
    size = 0
    with output.open("wb") if output is not None else contextlib.nullcontext(sys.stdout.buffer) as sink:
        async for chunk in download.stream():
            sink.write(chunk)
            size += len(chunk)
        sink.flush()
    if output is not None:
        print(json.dumps({"content_type": download.content_type, "bytes": size, "output": str(output)}))
