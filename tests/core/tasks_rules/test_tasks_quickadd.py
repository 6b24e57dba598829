"""Quick add: a table of phrases read as task fields (the pure parser), and parse_task on the
dispatcher and REST."""

from __future__ import annotations

from datetime import date, time

import httpx
import pytest

from fable_core.errors import InvalidInput
from fable_core.knowledge.quickadd import parse_quick

SATURDAY = date(2026, 12, 5)


@pytest.mark.parametrize(("text", "expected"), [
    ("pay rent every month on the 1st p1 #home",
     {"title": "pay rent", "recurrence_rule": "FREQ=MONTHLY;BYMONTHDAY=1", "due_date": date(2027, 1, 1),
      "next_occurrence": date(2027, 2, 1), "priority": "high", "tags": ["home"]}),
    ("call Anna tomorrow 5pm", {"title": "call Anna", "due_date": date(2026, 12, 6), "due_time": time(17)}),
    ("review budget next monday +Work", {"title": "review budget", "due_date": date(2026, 12, 7), "project": "Work"}),
    ("water plants in 3 days", {"title": "water plants", "due_date": date(2026, 12, 8)}),
    ("standup every weekday at 9:30am", {"title": "standup", "recurrence_rule": "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
                                         "due_date": date(2026, 12, 7), "due_time": time(9, 30)}),
    ("buy gift dec 24 !!", {"title": "buy gift", "due_date": date(2026, 12, 24), "priority": "medium"}),
    ("renew lease 3 march", {"title": "renew lease", "due_date": date(2027, 3, 3)}),
    ("dentist 2027-01-12 14:30", {"title": "dentist", "due_date": date(2027, 1, 12), "due_time": time(14, 30)}),
    ("taxes in a month #admin/tax p3", {"title": "taxes", "due_date": date(2027, 1, 5), "tags": ["admin/tax"],
                                        "priority": "low"}),
    ("plan holidays next week", {"title": "plan holidays", "due_date": date(2026, 12, 7)}),
    ("gym every monday and thursday", {"title": "gym", "recurrence_rule": "FREQ=WEEKLY;BYDAY=MO,TH",
                                       "due_date": date(2026, 12, 7)}),
    ("enjoy the sun on saturday", {"title": "enjoy the sun", "due_date": date(2026, 12, 12)}),
    ("Q3 report", {"title": "Q3 report"}),
    ("clean up tonight", {"title": "clean up", "due_date": SATURDAY}),
    ("pay window cleaner £20 on the 15th", {"title": "pay window cleaner £20", "due_date": date(2026, 12, 15),
                                            "when_words": ["on the 15th"]}),
    ("book flights the 5th", {"title": "book flights", "due_date": SATURDAY}),   # today counts
    ("renew passport on the 2nd", {"title": "renew passport", "due_date": date(2027, 1, 2)}),
    ("payroll on the 31st", {"title": "payroll", "due_date": date(2026, 12, 31)}),
    ("call Anna tomorrow at 5pm", {"title": "call Anna", "due_date": date(2026, 12, 6), "due_time": time(17),
                                   "when_words": ["at 5pm", "tomorrow"]}),
])
def test_quick_add_reads_a_table_of_phrases(text: str, expected: dict[str, object]) -> None:
    parsed = vars(parse_quick(text, SATURDAY))
    assert {k: parsed[k] for k in expected} == expected
    defaults = {"due_date": None, "due_time": None, "recurrence_rule": None, "priority": None, "tags": [],
                "project": None}
    assert all(parsed[k] == v for k, v in defaults.items() if k not in expected), parsed


async def test_parse_task_answers_fields_and_stores_nothing(call, rest: httpx.AsyncClient) -> None:
    parsed = await call("parse_task", text="pay rent every month on the 1st p1 #home")
    assert parsed["recurrence_rule"] == "FREQ=MONTHLY;BYMONTHDAY=1" and parsed["priority"] == "high"
    assert parsed["tags"] == ["home"] and parsed["title"] == "pay rent" and "due_time" not in parsed
    made = await call("create_note", **{k: v for k, v in parsed.items() if k != "next_occurrence"}, status="todo")
    assert made["recurrence_rule"] == "FREQ=MONTHLY;BYMONTHDAY=1" and made["next_due"] == parsed["next_occurrence"]
    with pytest.raises(InvalidInput, match="no title"):
        await call("parse_task", text="tomorrow p1")
    r = await rest.post("/tasks/parse", json={"text": "call Anna tomorrow 5pm"})
    assert r.status_code == 200 and r.json()["due_time"] == "17:00"
    for junk in ({"text": ""}, {}, {"text": "x" * 501}):
        assert (await rest.post("/tasks/parse", json=junk)).status_code == 422


@pytest.mark.parametrize(("text", "project", "title"), [
    ("call the electrician +Kitchen renovation tomorrow", "Kitchen renovation", "call the electrician"),
    ("call the electrician +kitchen RENOVATION", "Kitchen renovation", "call the electrician"),
    ("buy tiles +Kitchen", "Kitchen", "buy tiles"),
    ("plant bulbs +Garden before the frost", "Garden", "plant bulbs before the frost"),  # a new project: one word
    ("+Kitchen renovation plan it +Garden", "Garden", "plan it"),
])
def test_a_project_s_name_is_read_as_long_as_one_of_the_projects_titles(text: str, project: str, title: str) -> None:
    parsed = parse_quick(text, SATURDAY, ["Kitchen", "Kitchen renovation", "Garden shed"])
    assert (parsed.project, parsed.title) == (project, title)


async def test_parse_task_knows_the_caller_s_projects(call) -> None:
    project = await call("create_project", title="Kitchen renovation")
    parsed = await call("parse_task", text="call the electrician +Kitchen renovation friday")
    assert (parsed["title"], parsed["project"], parsed["project_id"]) == (
        "call the electrician", "Kitchen renovation", project["id"])
    new = await call("parse_task", text="prune roses +Garden")
    assert new["project"] == "Garden" and "project_id" not in new, "a project nobody has: the UI offers it"
