"""The three-way merge itself: edits of different sections both survive, edits of one stretch
made differently are a conflict named by its section, titles and tags merge as values and sets."""

from __future__ import annotations

from fable_core.knowledge.drafts.merge import merge_bodies, merge_tags, merge_title

BASE = "Intro\n\n## Plan\nstep one\nstep two\n\n## Budget\n100 EUR\n"


def test_edits_of_different_sections_both_survive() -> None:
    theirs = BASE.replace("step two", "step two, checked")
    yours = BASE.replace("100 EUR", "120 EUR") + "\n## Notes\nnew section\n"

    merged = merge_bodies(BASE, theirs, yours)

    assert merged.conflicts == []
    assert merged.text == theirs.replace("100 EUR", "120 EUR") + "\n## Notes\nnew section\n"


def test_the_same_lines_changed_differently_are_a_conflict_in_their_section() -> None:
    merged = merge_bodies(BASE, BASE.replace("100 EUR", "90 EUR"), BASE.replace("100 EUR", "120 EUR"))

    assert merged.conflicts == ["Budget"]
    assert "<<<<<<< theirs\n90 EUR\n=======\n120 EUR\n>>>>>>> yours\n" in merged.text


def test_the_same_change_on_both_sides_is_taken_once_and_nothing_changed_is_the_other_side() -> None:
    same = BASE.replace("step one", "step 1")
    assert merge_bodies(BASE, same, same).text == same
    assert merge_bodies(BASE, BASE, same).text == same
    assert merge_bodies(BASE, same, BASE).text == same
    assert merge_bodies("", "", "").text == ""


def test_titles_merge_as_values_and_tags_as_sets() -> None:
    assert merge_title("Trip", "Trip", "Trip to Rome") == "Trip to Rome"
    assert merge_title("Trip", "Rome trip", "Trip") == "Rome trip"
    assert merge_title("Trip", "Rome trip", "Trip to Rome") is None
    # theirs dropped b and added c; yours dropped a and added d
    assert merge_tags(["a", "b"], ["a", "c"], ["b", "d"]) == ["c", "d"]
