"""Plain text of markdown: text without markup is taken as it is, without parsing it, and must
read exactly as the parser would have made it."""

from __future__ import annotations

import random

from fable_core.knowledge.plaintext import _parsed, plain_text

# prose, whitespace of every kind and punctuation markup leaves alone; then every character
# that can be markup somewhere
_PROSE = ["word", "Kitchen", "plan", "42", "3.5", "well-known", "e.g.", "it's", '"quoted"', "(aside)",
          "a/b", "x > y", "50%", "@me", "?", "!", ",", ";", ":", "\ue000hit\ue001", "naïve", "日本",
          " ", " ", " ", "  ", "\t", "\n", "\n\n", "\n    ", "\n        ", "\r\n", "\u00a0"]
_MARKUP = ["-", "- ", "+ ", "* ", "> ", "1. ", "2) ", "#", "# ", "_", "*", "`", "~", "=", "==", "|", "[", "]",
           "[[", "]]", "<", "&amp;", "\\", "---", "```", "!["]


def test_text_taken_as_it_is_reads_as_the_parser_reads_it() -> None:
    rng = random.Random(41)
    for _ in range(4000):
        pieces = _PROSE if rng.random() < 0.5 else _PROSE + _MARKUP
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        limit = rng.choice([10, 40, 160])
        assert plain_text(text, limit) == _parsed(text[: limit * 3 + 200], limit), repr(text)


def test_prose_is_folded_and_cut_like_parsed_text() -> None:
    assert plain_text("Call  Ana\nabout the\t\tgarden.  ", 100) == "Call Ana about the garden."
    assert plain_text("one two three four", 10) == "one two t…"
    assert plain_text("# Plan\n\nCall [[Bob|him]] **today**", 40) == "Plan Call him today"
