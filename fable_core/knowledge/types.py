"""Argument types shared by the knowledge tools: constraints live here, once."""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints

from fable_core.db.hashtags import MAX_TAGS, normalise_tag
from fable_core.knowledge.recurrence import check_occurs
from fable_core.knowledge.recurrence_words import check_parts, looks_like_rule, rule_from_words

__all__ = [
    "Body",
    "Color",
    "Kind",
    "NoteId",
    "Priority",
    "ProjectRef",
    "RecurrenceRule",
    "Status",
    "Tag",
    "Tags",
    "Title",
    "normalise_tag",
]

MAX_TITLE = 300
MAX_BODY = 1_000_000

NoteId = Annotated[int, Field(ge=1, le=2**31 - 1)]
Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE)]
Body = Annotated[str, StringConstraints(max_length=MAX_BODY)]
Status = Literal["todo", "in_progress", "done", "cancelled"]
Priority = Literal["none", "low", "medium", "high"]
Kind = Literal["note", "task", "person", "place", "list", "all"]
Color = Annotated[str, StringConstraints(pattern=r"^#[0-9a-fA-F]{6}$")]

def _normalise_tags(tags: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for tag in tags:
        seen[normalise_tag(tag)] = None
    if len(seen) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags")
    return list(seen)


Tag = Annotated[str, AfterValidator(normalise_tag)]
Tags = Annotated[
    list[str],
    AfterValidator(_normalise_tags),
]


_UTC_UNTIL = re.compile(r"(UNTIL=\d{8}(?:T\d{6})?)Z")


def _check_rrule(rule: str) -> str:
    """Normalise an RRULE (upper case, no "RRULE:" prefix, UNTIL as a floating date-time, since
    tasks recur by date), or translate words ("every weekday") into one; refuse, in words and
    with the rule to use, what does not parse, recurs more than daily, names a time of day or
    never occurs.

    "Never" is judged without the due date (a type knows no other field): the rule's pattern,
    ignoring INTERVAL, COUNT and UNTIL, must match a date within RECURRENCE_HORIZON years.
    Whether it does from a given due date is ``next_occurrence``'s business.
    """
    rule = rule.strip() if looks_like_rule(rule) else rule_from_words(rule)
    rule = _UTC_UNTIL.sub(r"\1", rule.upper().removeprefix("RRULE:"))
    check_parts(rule)  # and every second of the day listed would cost 30 ms a parse
    check_occurs(rule)
    return rule


RecurrenceRule = Annotated[
    str,
    StringConstraints(max_length=500),
    AfterValidator(_check_rrule),
    Field(description="RRULE ('FREQ=WEEKLY;BYDAY=MO') or words ('daily', 'every 2 weeks'). Needs a due_date."),
]

ProjectRef = Annotated[
    str | None,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
]

DateArg = date
