"""A chat turn from the command line: ``fable call start_chat`` (and the other tools that start an
answer) wait for the answer they start, stream it on stderr and exit once it is written, instead
of leaving it to die with the process (stored ``interrupted``). The model is the fake Ollama.

Most tests run the command in-process (``support.cli``); Ctrl-C needs the real executable in a
subprocess, to send it SIGINT.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from support.cli import fable_cli
from support.fake_llm import FakeLLM, Reply
from support.pace import scaled

from fable_core.db.models import Conversation, Message
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Why does sourdough rise?"
ANSWER = "Wild yeast and lactic bacteria make gas, and the gluten holds it."


@pytest.fixture
def cli_env(database_url: str, ollama_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The command's settings: the test database and the fake Ollama as its model server."""
    env = {"DATABASE_URL": database_url, "FABLE_DATA_DIR": str(tmp_path), "LLM_PROVIDER": "ollama",
           "OLLAMA_URL": ollama_url, "EMBED_MODEL": "fake-embed"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


async def answers(fable: Fable) -> list[tuple[str, str]]:
    async with fable.db.reading() as s:
        return [(m.status, m.content) for m in await s.scalars(
            select(Message).where(Message.role == "assistant").order_by(Message.id))]


async def conversations(fable: Fable) -> list[str]:
    async with fable.db.reading() as s:
        return list(await s.scalars(select(Conversation.title).order_by(Conversation.id)))


async def test_start_chat_answers_to_the_end_streaming_the_answer(
    cli_env: dict[str, str], fable: Fable, alice: Caller, fake: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.replies.append(Reply(ANSWER, delay=0.02))  # still writing when start_chat returns
    titled = threading.Event()  # the title comes after the answer: the command's close must not cut it
    threading.Timer(0.5, titled.set).start()
    fake.plain_replies.append(Reply("Sourdough rising", hold=titled))

    status, out, err = await fable_cli("call", "start_chat", json.dumps({"content": QUESTION}), capsys=capsys)

    assert status == 0, err
    result = json.loads(out)
    assert result["conversation_id"] == 1 and result["status"] == "done" and result["content"] == ANSWER
    assert result["message_id"] == 2 and result["user_message_id"] == 1
    assert ("waiting for the work start_chat started (fable call follow_answer '{\"conversation_id\": 1}' "
            "follows it too); Ctrl-C stops it") in err
    assert ANSWER in err  # the tokens, as they came
    assert err.index("context: ") < err.index(ANSWER)
    assert await answers(fable) == [("done", ANSWER)]
    assert await conversations(fable) == ["Sourdough rising"]


async def test_send_message_waits_for_its_answer_too(
    cli_env: dict[str, str], fable: Fable, alice: Caller, fake: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    conversation = await fable.call("create_conversation", {}, alice)
    fake.replies.append(Reply("Flour, water and time.", delay=0.02))
    status, out, err = await fable_cli(
        "call", "send_message", json.dumps({"conversation_id": conversation["id"], "content": "What is in it?"}),
        capsys=capsys)
    assert status == 0, err
    assert json.loads(out)["content"] == "Flour, water and time." and json.loads(out)["status"] == "done"
    assert await answers(fable) == [("done", "Flour, water and time.")]


async def test_an_answer_cut_off_exits_1_with_what_it_kept(
    cli_env: dict[str, str], fable: Fable, alice: Caller, fake: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.replies.append(Reply("The sea is wide and", cut=True))
    status, out, err = await fable_cli("call", "start_chat", '{"content": "Describe the sea"}', capsys=capsys)
    assert status == 1
    result = json.loads(out)
    assert (result["status"], result["content"]) == ("interrupted", "The sea is wide and")
    last = err.splitlines()[-1]
    assert last.startswith("error: interrupted: ") and "cut off before the model finished" in last
    assert await answers(fable) == [("interrupted", "The sea is wide and")]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["start_chat", '{"content": ""}'], "error: invalid_input: invalid arguments for start_chat: content:"),
        (["start_chat", '{"content": "hi", "colour": "red"}'],
         "error: invalid_input: invalid arguments for start_chat: colour:"),
        (["send_message", '{"conversation_id": 99, "content": "hi"}'], "error: not_found: "),
        (["start_chat", '{"content": "hi"}', "--no-wait"],
         "error: invalid_input: start_chat starts work that goes on after it returns, and `fable call` runs "
         "that work in its own process, which would end it: --no-wait is refused and nothing was started."),
    ],
)
async def test_bad_input_and_no_wait_start_nothing(
    cli_env: dict[str, str], fable: Fable, alice: Caller, fake: FakeLLM, capsys: pytest.CaptureFixture[str],
    argv: list[str], message: str,
) -> None:
    status, out, err = await fable_cli("call", *argv, capsys=capsys)
    assert (status, out) == (1, "")
    assert err.startswith(message), err
    assert "Traceback" not in err
    assert await conversations(fable) == [] and await answers(fable) == []
    assert fake.chat_bodies() == []


async def test_no_wait_changes_nothing_for_a_tool_that_starts_no_work(
    cli_env: dict[str, str], fable: Fable, alice: Caller, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = await fable_cli("call", "create_conversation", '{"title": "Plans"}', "--no-wait",
                                       capsys=capsys)
    assert status == 0, err
    assert json.loads(out)["title"] == "Plans"


async def _read_until(stream: asyncio.StreamReader, seen: bytearray, text: bytes) -> None:
    while text not in seen:
        chunk = await stream.read(256)
        assert chunk, f"the command ended before it wrote {text!r}: {bytes(seen)!r}"
        seen += chunk


async def test_ctrl_c_stops_the_answer_keeps_its_text_and_says_so(
    cli_env: dict[str, str], fable: Fable, alice: Caller, fake: FakeLLM
) -> None:
    words = " ".join(f"word{i}" for i in range(200))
    fake.replies.append(Reply(words, delay=0.05))  # ten seconds of answer
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fable_web.cli", "call", "start_chat", '{"content": "Say many words"}',
        cwd=ROOT, env={**os.environ, **cli_env}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stderr is not None and process.stdout is not None
    err = bytearray()
    async with asyncio.timeout(scaled(60)):
        await _read_until(process.stderr, err, b"word3 ")  # the answer is being written
        process.send_signal(signal.SIGINT)
        out, rest = await asyncio.gather(process.stdout.read(), process.stderr.read())
        status = await process.wait()
    said = (err + rest).decode()
    assert status == 130, said
    assert "stopping it (fable call stop_answer '{\"conversation_id\": 1}') ..." in said
    assert "stopped: the work start_chat started ended stopped; what it kept is on stdout" in said
    result: dict[str, Any] = json.loads(out)
    assert result["status"] == "stopped" and result["content"].startswith("word0 word1 word2 word3")
    [(stored, content)] = await answers(fable)
    assert stored == "stopped" and content == result["content"] and len(content) < len(words)
