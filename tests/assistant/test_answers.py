"""Reading a model's answer: titles, tags, JSON and summaries, with the answers small models
(SmolLM2-135M, Qwen2.5-Coder-0.5B) actually gave."""

from __future__ import annotations

import pytest

from fable_core.assistant.answers import TITLE_CHARS, cut, echoes, json_object_from, summary_from, tags_from, title_from

LONG = ("The user is asking about how to bake a sourdough bread at home and what kind of flour and "
        "starter they need for it, step by step.")  # 129 characters, what SmolLM2 offered as a title


@pytest.mark.parametrize(("answer", "title"), [
    ("Baking sourdough bread", "Baking sourdough bread"),
    ('"Baking sourdough bread."', "Baking sourdough bread"),
    ("Title: **Baking bread**", "Baking bread"),
    ("## Conversation title: “Sourdough”", "Sourdough"),
    ("Sure! Here is a short title:\n\nSourdough at home\n\nI hope this helps.", "Sourdough at home"),
    ("Title:\nTrip to Rome", "Trip to Rome"),
    ("- Packing list for Rome, July", "Packing list for Rome, July"),
    (LONG, "The user is asking about how to bake"),
    ("Supercalifragilisticexpialidocious" * 3, ("Supercalifragilisticexpialidocious" * 3)[:TITLE_CHARS]),
    ("", ""),
    ('  \n""\n**', ""),
    ("Title:", ""),
])
def test_a_title_is_one_cleaned_line_of_a_few_words(answer: str, title: str) -> None:
    assert len(LONG) == 129
    assert title_from(answer) == title
    assert len(title) <= TITLE_CHARS and len(title.split()) <= 8


def test_cut_stops_at_a_word_boundary() -> None:
    assert cut("call the bank about the mortgage renewal before friday at noon") == \
        "call the bank about the mortgage renewal before"
    assert cut("one two three", words=2) == "one two"
    assert cut("first line\nsecond line") == "first line"
    assert cut("  ") == ""


def test_tags_are_normalised_like_note_tags() -> None:
    found = tags_from("Travel, City Trips, #Germany, work/acme, node.js, travel.", "Suggest tags.")
    assert found.tags == ["travel", "city-trips", "germany", "work/acme", "node.js"]
    assert found.reason() == ""


def test_phrases_labels_and_echoes_are_not_tags() -> None:
    instruction = "Suggest up to 5 short tags for this note. Answer comma-separated, lower case."
    found = tags_from("Tags: work, the user wants", instruction)
    assert found.tags == ["work"]
    assert found.refused == {"the user wants": "a phrase"}
    found = tags_from("Here are some tags: note: a list of things to do?, lower case, comma-separated, "
                      "a very long tag made of many words, shortcuts-and-keyboard-layouts-for-everyone",
                      instruction)
    assert found.tags == []
    assert found.refused == {
        "note: a list of things to do?": "punctuation", "lower case": "the instruction read back",
        "comma-separated": "the instruction read back", "a very long tag made of many words": "too long",
        "shortcuts-and-keyboard-layouts-for-everyone": "too long"}
    assert found.reason().startswith("the model suggested no usable tags: 'note: a list of things to do?' "
                                     "(punctuation); 'lower case' (the instruction read back)")


def test_the_users_own_tags_are_kept_and_the_notes_own_skipped() -> None:
    instruction = "Suggest up to 5 short tags for this note."
    assert tags_from("note, tags", instruction).tags == []
    assert tags_from("note, tags", instruction, keep=["note"]).tags == ["note"]
    found = tags_from("Travel, travel, TRAVEL", instruction, skip=["travel"])
    assert (found.tags, found.skipped, found.reason()) == (
        [], ["travel", "travel", "travel"], "the note already has every tag the model suggested")
    assert tags_from("", instruction).reason() == "the model suggested no tags"


@pytest.mark.parametrize(("answer", "found"), [
    ('{"kind": "task"}', {"kind": "task"}),
    ('Sure!\n```json\n{"kind": "note", "title": "Ideas"}\n```', {"kind": "note", "title": "Ideas"}),
    ("2026-12-10", None),
    ("I am not sure what you mean.", None),
    ('{"kind": "task", "title": }', None),
    ("[1, 2]", None),
])
def test_a_json_object_is_found_or_not(answer: str, found: dict | None) -> None:
    assert json_object_from(answer) == found


INSTRUCTION = "Summarise this project in at most 80 words: what it is about, its goal and its current state."
PROMPT = "Project: Casa\nDescription: the old house by the lake\nGoal: None\nNotes:\n- Roof: new tiles"


@pytest.mark.parametrize(("answer", "result"), [
    ("Renovating the house: roof tiles and the garden.", ("Renovating the house: roof tiles and the garden.", "")),
    ("Summary: Renovating the old house by the lake.", ("Renovating the old house by the lake.", "")),
    ("", ("", "the model's answer was empty")),
    ("  \n\n ", ("", "the model's answer was empty")),
    ("...", ("", "the model's answer was empty")),
    ("Summarise this project in at most 80 words", ("", "the model's answer repeated the prompt")),
    ("Project: Casa\nDescription: the old house", ("", "the model's answer repeated the prompt")),
    ("The old house by the lake.", ("", "the model's answer repeated the prompt")),
])
def test_a_summary_is_refused_when_empty_or_an_echo(answer: str, result: tuple[str, str]) -> None:
    assert summary_from(answer, INSTRUCTION, PROMPT) == result


def test_an_echo_is_the_prompt_read_back_not_words_shared_with_it() -> None:
    assert echoes("Give this conversation a short title", "Give this conversation a short title (at most 6 words).")
    assert not echoes("A short trip to Rome", "Give this conversation a short title (at most 6 words).")
    assert not echoes("The roof gets new tiles this summer, then the garden.", INSTRUCTION, PROMPT)
