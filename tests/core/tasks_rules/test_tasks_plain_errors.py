"""Error messages for people (fable_web.plain): hints naming tools or arguments are taken out,
plain words are kept, quoted titles are never read as code."""

from __future__ import annotations

import pytest

from fable_web.plain import for_people

TOOLS = ["update_note", "convert_note", "create_note", "assist_note", "share", "research"]


@pytest.mark.parametrize(("message", "plain"), [
    ("note 4 'Alpha' already has the same title; update it with update_note (note_id=4) or choose a different title",
     "note 4 'Alpha' already has the same title"),
    ("note 3 is not a task; convert it with convert_note first", "note 3 is not a task"),
    ("A similar task exists: 'Pay rent' (id 3); update it instead, or repeat with confirm=true to create this one",
     "A similar task exists: 'Pay rent' (id 3)"),
    ("invalid arguments for assist_note: instruction: String should have at least 1 character",
     "invalid input: instruction: String should have at least 1 character"),
    ("task 5 is done; reopen it with update_note(status='todo') before rescheduling", "task 5 is done"),
    ("note 'update_note ideas' was shared; you may share it again", None),  # a title, and a plain word
    ("only an admin may do this", None),
])
def test_hints_for_agents_are_taken_out_of_what_people_read(message: str, plain: str | None) -> None:
    shown, hint = for_people(message, TOOLS)
    assert (shown, hint) == ((plain, message) if plain else (message, None))
