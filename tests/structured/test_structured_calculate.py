"""calculate: a table of expressions and answers (today is the user's today), abusive ones
refused at once, bad input refused on the dispatcher, REST and MCP."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from mcp import Client
from support.structured import Api, Call

from fable_core.assistant.calculator.evaluator import evaluate
from fable_core.assistant.toolpick import ToolPicker
from fable_core.errors import InvalidInput
from fable_core.runtime import Fable
from fable_core.tools.availability import Availability
from fable_core.tools.caller import Caller
from fable_mcp.server import build_server

TODAY = date(2026, 12, 5)

ANSWERS = [
    ("2 + 3 * 4", "14"),
    ("(3.5 + 2) * 4", "22"),
    ("2^10", "1024"),
    ("2**0.5", "1.41421356237"),
    ("0.1 + 0.2", "0.3"),
    ("7 // 2 + 7 % 2", "4"),
    ("-3 + +5", "2"),
    ("15% of 240", "36"),
    ("what is 10 plus 5 times 2?", "20"),
    ("sqrt(16) + factorial(5)", "124"),
    ("round(pi, 3)", "3.142"),
    ("max(3, 9, 4) - min(2, 8)", "7"),
    ("3 x 4", "12"),
    ("log10(1000)", "3"),
    ("days until 2027-03-01", "86 days (12 weeks 2 days)"),
    ("days since 2026-01-01", "338 days (48 weeks 2 days)"),
    ("weeks between 2026-01-01 and 2026-12-05", "48.285714 weeks (48 weeks 2 days)"),
    ("days from 2026-12-01 to 2026-12-25", "24 days (3 weeks 3 days)"),
    ("months until 2027-06-05", "6 months"),
    ("2026-12-05 + 90 days", "2027-03-05 (Friday)"),
    ("2026-01-31 + 1 month", "2026-02-28 (Saturday)"),
    ("today + 2 weeks", "2026-12-19 (Saturday)"),
    ("tomorrow", "2026-12-06 (Sunday)"),
    ("3 weeks ago", "2026-11-14 (Saturday)"),
    ("3h 20min in minutes", "200 minutes"),
    ("3h20m in minutes", "200 minutes"),
    ("90 min", "1 h 30 min"),
    ("2 days 4 hours in hours", "52 hours (2 days 4 h)"),
    ("(2026-12-25 - today) / 1 week", "2.85714285714"),
    ("1 week * 3 in days", "21 days (3 weeks)"),
]


def test_answers() -> None:
    said = {expression: evaluate(expression, TODAY).text for expression, _ in ANSWERS}
    assert said == dict(ANSWERS)


ABUSE = ["9**9**9**9", "10**100000", "2.5**1e10", "factorial(100000)", "factorial(-1)", "1" * 301, "9" * 31,
         "(" * 120 + "1" + ")" * 120, "-" * 250 + "1", "__import__('os').system('true')", "().__class__.__mro__",
         "open('x')", "[1] * 10", "lambda: 1", "x", "1/0", "5 % 0", "1e308 * 10", "exp(1000)", "2026-02-30 + 1 day",
         "2026-12-05 * 2", "3 days in cups", "12 in days", "1 month in days", "sqrt(-1)", "(-8) ** 0.5", "",
         "1 if 1 else 2", "a.b", "round(1, 1000)"]


def test_abuse_is_refused_at_once() -> None:
    for expression in ABUSE:
        started = time.perf_counter()
        with pytest.raises(InvalidInput):
            evaluate(expression, TODAY)
        assert time.perf_counter() - started < 0.05, expression


async def test_today_is_the_users_today(call: Call) -> None:
    await call("set_setting", key="timezone", value="Pacific/Kiritimati")  # UTC+14: often tomorrow already
    found = await call("calculate", expression="today + 1 day")
    assert found["result"].startswith(found["date"]) and "value" not in found
    assert date.fromisoformat(found["date"]) == datetime.now(ZoneInfo("Pacific/Kiritimati")).date() + timedelta(1)
    assert await call("calculate", expression=" 2^10 ") == {"expression": "2**10", "result": "1024", "value": 1024}


async def test_bad_input_on_every_surface(call: Call, api: Api, fable: Fable, alice: Caller) -> None:
    for expression in ("9**9**9**9", "", "x" * 301, "import os"):
        with pytest.raises(InvalidInput):
            await call("calculate", expression=expression)
    async with api(alice) as http:
        ok = await http.get("/calculate", params={"expression": "15% of 240"})
        assert ok.status_code == 200 and ok.json()["value"] == 36
        for expression in ("9**9**9**9", "", "open('x')"):
            bad = await http.get("/calculate", params={"expression": expression})
            assert bad.status_code == 422 and bad.json()["error"]["type"] == "invalid_input"
    async with Client(build_server(fable, replace(alice, surface="mcp"))) as client:
        refused = await client.call_tool("calculate", {"expression": "factorial(10**6)"})
        assert refused.is_error and "factorial" in refused.content[0].text  # type: ignore[union-attr]


def test_the_assistant_is_offered_calculate_for_arithmetic_and_dates(fable: Fable) -> None:
    picker = ToolPicker(fable.registry, Availability({"llm"}))
    admin = Caller(user_id=1, username="root", role="admin")
    for message in ("what is 17*23?", "15% of 240", "how many days until 2027-03-01?", "2026-12-05 + 90 days",
                    "how many weeks between 2026-01-01 and 2026-12-05"):
        names = [s["function"]["name"] for s in picker.offer(admin, message).schemas()]
        assert "calculate" in names, (message, names)
