"""The ``calculate`` tool: the evaluator of :mod:`.evaluator`, with the caller's today."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from fable_core.assistant.calculator.evaluator import MAX_LENGTH, evaluate, needs_today
from fable_core.tools import Context, Route, tool
from fable_core.tools.results import absent_when_none

__all__ = ["Calculation"]


class Calculation(BaseModel):
    expression: str = Field(description="What was calculated, as understood.")
    result: str
    value: float | int | None = absent_when_none("The result as a number, when it is one.")
    date: dt.date | None = absent_when_none("The result as a date, when it is one.")


@tool(group="calculator", title="Calculate", scope="read", transaction="phases", route=Route("GET", "/calculate"))
async def calculate(
    ctx: Context,
    expression: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_LENGTH)],
) -> Calculation:
    """Calculate exactly: arithmetic, %, dates and durations.

    E.g. '15% of 240', 'sqrt(2)', 'days until 2027-03-01', 'weeks between 2026-01-01 and today',
    '2026-12-05 + 90 days', '3h 20min in minutes'. Dates: YYYY-MM-DD, today, tomorrow, yesterday."""
    today = await ctx.today() if needs_today(expression) else None
    found = evaluate(expression, today)
    return Calculation(expression=found.expression, result=found.text, value=found.value, date=found.date)
