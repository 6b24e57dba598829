"""Code told from prose (``fable_core.knowledge.codespans``): fenced blocks and inline spans as
CommonMark reads them, every byte kept, and linear on pathological text (a note is up to a
million characters; a quadratic scan of its backticks would hold a worker for minutes)."""

from __future__ import annotations

from fable_core.knowledge.codespans import outside_code, prose
from fable_core.knowledge.wikilinks import parse_links


def _marked(text: str) -> str:
    return outside_code(text, lambda piece: piece.replace("[[", "<<"))


def test_fences_and_inline_spans_are_code_and_every_byte_stays() -> None:
    text = ("a [[X]] `[[Y]]` b ``[[Z`Z]]`` c\n```md\n[[F]]\n```\n~~~\n[[T]]\n~~~\n"
            "``` a fence never closed: code to the end\n[[G]]\n")
    out = _marked(text)
    assert out.replace("<<", "[[") == text
    assert out.startswith("a <<X]] `[[Y]]` b ``[[Z`Z]]`` c\n```md\n[[F]]\n```\n~~~\n[[T]]\n~~~\n")
    assert parse_links(text) == {"x": "X"}


def test_backticks_without_a_closer_are_prose() -> None:
    assert _marked("``a `[[B]]` and `` [[C]]") == "``a `[[B]]` and `` <<C]]"  # `` … `` is one span
    assert _marked("a ` lone [[B]]") == "a ` lone <<B]]"
    assert _marked("``` in a line, [[B]]") == "``` in a line, [[B]]"  # a fence opener: code to the end


def test_pathological_backticks_and_headings_stay_linear() -> None:
    runs = "".join("`" * n + f" [[N{n}]] " for n in range(1, 1400))  # ~1M characters, no run closes
    assert len(runs) > 900_000
    assert _marked(runs).count("<<") == 1399
    headings = "# heading [[H]]\n" * 30_000
    assert prose(headings) == headings and len(parse_links(headings)) == 1
    items = "- [[I]] `x`\n" * 400_000
    assert _marked(items).count("<<") == 400_000
