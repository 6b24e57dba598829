"""How often a real small model does what everyday requests ask, through Fable's whole turn.

    python -m bench.smalleval [--no-write]

The labelled set is ``tests/assistant/data/everyday.json`` (the one tool picking is tested
against): requests people type, each with the tool it needs and the arguments it must carry. A
request is **done right** when, in its turn, the model called that tool with those arguments
and the call ran (or waits for the person's confirmation, or failed only because a service is
out of reach here: the weather). Labels: ``"@Title"`` is the id of the seeded note, project
(``@project:``), event (``@event:``) or trashed note (``@trash:``) of that name; ``{tomorrow}``,
``{friday}``... are dates; other strings must appear in the argument (any case), numbers equal
it; ``"*"`` lists strings that must appear anywhere in the arguments (``a|b``: either).

Each request is a fresh conversation with the same seeded notes, tasks, projects and events,
sent through the assistant as the chat sends it (tool picking, the tool loop, prompt tool mode),
to SmolLM2-135M-Instruct behind llama-cpp-python's server (one thread, greedy: temperature 0,
at most 200 tokens an answer, so a run is repeatable and bounded). ``--model PATH`` runs another
GGUF instead (Qwen2.5-0.5B-Instruct's, say); its section is then named after the file. A tool whose service is not
configured here (research: SearXNG) is left out of the share, and said.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.harness.bench import Bench, Measured
from bench.harness.machine import Machine
from bench.harness.options import option
from bench.harness.report import Figure
from bench.harness.session import session
from fable_core.config import load_settings
from fable_core.runtime import Fable
from fable_core.tools.caller import Caller
from tests.support.llama import MODEL_ALIAS, find_model, proxy_app, running_llama
from tests.support.servers import serve

__all__ = ["BENCH", "Options"]

EVERYDAY = Path(__file__).resolve().parents[1] / "tests" / "assistant" / "data" / "everyday.json"
N_CTX = 8192
MAX_TOKENS = 200
SERVICE_ERRORS = frozenset({"unavailable"})  # the world failed, not the model
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass(frozen=True)
class Options:
    model: str | None = option(None, "a GGUF file to run instead of SmolLM2-135M (its own section)")


@dataclass
class Outcome:
    request: str
    tool: str
    calls: list[dict[str, Any]] = field(default_factory=list)  # name, arguments, ok / error type
    right: bool | None = None  # None: the tool cannot run here
    seconds: float = 0.0
    answer: str = ""


def dates(today: date) -> dict[str, str]:
    found = {"today": today.isoformat(), "tomorrow": (today + timedelta(days=1)).isoformat()}
    for n, name in enumerate(_DAYS):
        ahead = (n - today.weekday()) % 7 or 7
        found[name] = (today + timedelta(days=ahead)).isoformat()
    return found


def resolve(label: str, refs: dict[str, int], days: dict[str, str]) -> str | int:
    if label.startswith("@"):
        return refs[label[1:]]
    return re.sub(r"\{(\w+)\}", lambda m: days[m.group(1)], label)


def matches(arguments: dict[str, Any], labels: dict[str, Any], refs: dict[str, int], days: dict[str, str]) -> bool:
    text = json.dumps(arguments, ensure_ascii=False).lower()
    for key, label in labels.items():
        if key == "*":
            for wanted in label:
                options = [str(resolve(option, refs, days)).lower() for option in wanted.split("|")]
                if not any(option in text for option in options):
                    return False
            continue
        if key not in arguments:
            return False
        want = resolve(label, refs, days) if isinstance(label, str) else label
        got = arguments[key]
        if isinstance(want, int):
            if str(got).strip() != str(want):
                return False
        elif str(want).lower() not in str(got).lower():
            return False
    return True


async def seed(fable: Fable, caller: Caller, today: date) -> dict[str, int]:
    """The notes, tasks, list, projects, event and trashed note the requests speak of."""
    from fable_core.identity.accounts import create_user

    refs: dict[str, int] = {}

    async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await fable.call(tool, arguments, caller)
        return result

    notes = [
        {"title": "Boiler service", "status": "todo", "due_date": (today + timedelta(days=3)).isoformat()},
        {"title": "Kitchen quotes", "body": "Jon quoted £4,200 for the cabinets, Ana £3,900. Leaning towards Jon."},
        {"title": "Fable", "status": "in_progress", "body": "The notes app I am building."},
        {"title": "Packing", "body": "Passport, charger, two shirts, walking boots, rain jacket, the blue bag, "
                                     "snacks for the train, the book I am reading, sunglasses and a hat."},
        {"title": "Lentil soup recipe", "body": "Red lentils, onion, carrot, cumin; simmer 25 minutes."},
        {"title": "Old passwords", "body": "Moved to the password manager in 2025."},
        {"title": "Holiday plan", "body": "Lisbon in May: flights on the 3rd, back on the 10th."},
        {"title": "Kitchen plans", "body": "New worktop, move the sink under the window."},
        {"title": "Renovation ideas", "body": "Start with [[Kitchen plans]], then the bathroom."},
        {"title": "Ana", "body": "Phone: 07700 900123. Works at the library."},
        {"title": "Report", "status": "todo", "body": "The quarterly report."},
        {"title": "Draft letter", "body": "Dear council, about the bins..."},
    ]
    for note in notes:
        refs[note["title"]] = (await call("create_note", note))["id"]
    await call("update_note", {"note_id": refs["Lentil soup recipe"], "body": "Red lentils, onion, carrot, cumin, "
                                                                              "lemon; simmer 25 minutes."})
    await call("log_work", {"note_id": refs["Report"], "minutes": 90})
    refs["Shopping list"] = (await call("create_list", {"title": "Shopping list", "items": ["bread"]}))["id"]
    for title in ("Garden renovation", "Website"):
        refs[f"project:{title}"] = (await call("create_project", {"title": title}))["id"]
    refs["event:Dentist appointment"] = (await call("create_event", {
        "title": "Dentist appointment", "start": f"{(today + timedelta(days=1)).isoformat()}T10:00:00"}))["id"]
    await call("delete_note", {"note_id": refs["Draft letter"]})
    refs["trash:Draft letter"] = refs["Draft letter"]
    async with fable.db.transaction() as s:
        await create_user(s, "ana", None)
    return refs


async def one(fable: Fable, caller: Caller, entry: dict[str, Any], refs: dict[str, int],
              days: dict[str, str], runnable: set[str]) -> Outcome:
    assistant = fable.assistant
    assert assistant is not None
    outcome = Outcome(entry["request"], entry["tool"])
    if entry["tool"] not in runnable:
        return outcome
    conversation = (await fable.call("create_conversation", {}, caller))["id"]
    started = time.perf_counter()
    await assistant.send(caller, conversation, entry["request"])
    async for event in assistant.follow(caller, conversation):
        if event.event == "tool_result":
            data = event.data
            outcome.calls.append({"name": data["name"], "arguments": data.get("arguments", {}),
                                  "ok": data.get("ok", False), "confirm": bool(data.get("requires_confirmation")),
                                  "error": (data.get("error") or {}).get("type")})
        elif event.event == "token":
            outcome.answer += event.data["text"]
    await assistant.wait(conversation)
    outcome.seconds = time.perf_counter() - started
    outcome.right = any(c["name"] == entry["tool"] and matches(c["arguments"], entry["arguments"], refs, days)
                        and (c["ok"] or c["confirm"] or c["error"] in SERVICE_ERRORS) for c in outcome.calls)
    return outcome


def _greedy(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "temperature": 0, "seed": 1, "max_tokens": min(body.get("max_tokens") or MAX_TOKENS, MAX_TOKENS)}


async def run(database_url: str, tmp: Path, model: Path) -> list[Outcome]:
    from fable_core.identity.accounts import create_user

    entries = json.loads(EVERYDAY.read_text())
    seen: list[dict[str, Any]] = []
    async with running_llama(model, n_ctx=N_CTX) as llama_url, \
            httpx.AsyncClient(base_url=llama_url, timeout=600) as client, \
            serve(proxy_app(client, seen, _greedy)) as proxy:
        settings = load_settings({}, database_url=database_url, fable_data_dir=tmp, llm_provider="openai",
                                 openai_base_url=f"{proxy}/v1", openai_model=MODEL_ALIAS,
                                 llm_tool_modes=[f"{MODEL_ALIAS}=prompt"], fable_secret_key="bench" * 8,
                                 llm_first_token_timeout=600)
        fable = await Fable.open(settings)
        try:
            async with fable.db.transaction() as s:
                user = await create_user(s, "bench", None)
            caller = Caller(user_id=user.id, username="bench", role=user.role)
            today = datetime.now(UTC).date()
            refs = await seed(fable, caller, today)
            assert fable.assistant is not None
            runnable = {t.name for t in fable.assistant.tools.eligible(caller)}
            return [await one(fable, caller, entry, refs, dates(today), runnable) for entry in entries]
        finally:
            await fable.close()


def share(outcomes: list[Outcome]) -> tuple[int, int]:
    counted = [o for o in outcomes if o.right is not None]
    return sum(1 for o in counted if o.right), len(counted)


@dataclass
class Evaluation:
    model: str  # the GGUF's file name
    outcomes: list[Outcome]


def figures(evaluation: Evaluation) -> list[Figure]:
    right, counted = share(evaluation.outcomes)
    return [Figure(f"{evaluation.model} done right", 100 * right / max(counted, 1), "%")]


def _called(o: Outcome) -> str:
    if o.right is None:
        return "not offered here (its service is not configured)"
    if not o.calls:
        said = " ".join(o.answer.split())  # one table row: no line breaks
        return "no tool call" + (f": “{said[:60]}”" if said else "")
    return "; ".join(f"`{c['name']}` {json.dumps(c['arguments'], ensure_ascii=False)[:80]}"
                     + ("" if c["ok"] or c["confirm"] else f" ({c['error']})") for c in o.calls[:3])


def render(evaluation: Evaluation, machine: Machine, _memory: object) -> str:
    outcomes, model = evaluation.outcomes, evaluation.model
    right, counted = share(outcomes)
    rows = "\n".join(f"| {o.request} | `{o.tool}` | {'yes' if o.right else ('-' if o.right is None else 'no')} | "
                     f"{_called(o).replace('|', '/')} | {o.seconds:.0f} s |" for o in outcomes)
    return f"""## Small model: everyday requests done right

`python -m bench.smalleval`: the {len(outcomes)} labelled requests of
`tests/assistant/data/everyday.json`, each in a fresh conversation through the assistant's whole
turn (tool picking, prompt tool mode, the tool loop, seeded notes, tasks, projects and events),
against `{model}` behind llama-cpp-python's server (one thread, greedy, at most {MAX_TOKENS}
tokens an answer). Done right: the labelled tool called with the labelled
arguments, and the call ran (or waits for confirmation). See the module's docstring for the rules.

{machine.describe()}

**{model}: {right} of {counted} done right ({100 * right / max(counted, 1):.0f}%).** Qwen2.5-0.5B, the issue's
model, could not be measured here: this machine reaches only PyPI, npm and Debian's packages, and
none carries it (`python -m bench.smalleval --model qwen2.5-0.5b-instruct-q4_k_m.gguf` measures it
into a section of its own).

| request | needs | done right | what the model called | turn |
|---|---|---|---|---|
{rows}
"""


def _measure(o: Options) -> Measured[Evaluation]:
    model = Path(o.model) if o.model else find_model()
    with tempfile.TemporaryDirectory(prefix="fable-bench-") as tmp, session(Path(tmp)) as bench:
        result = Evaluation(model.name, asyncio.run(run(bench.database_url, Path(tmp), model)))
    return bench.measured(result)


def _section(o: Options) -> str:
    return f"smalleval-{Path(o.model).stem}" if o.model else "smalleval"


BENCH = Bench("smalleval", __doc__, Options, _measure, render, figures, quick=Options(), section=_section)


if __name__ == "__main__":
    raise SystemExit(BENCH.main())
