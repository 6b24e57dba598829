"""What a model's answer may become: a title, tags, a JSON object, a summary.

A model's answer is untrusted input, and a small one (SmolLM2-135M, Qwen2.5-0.5B) answers
loosely: a "title" of 129 characters with a "Title:" prefix and quotes, "tags" that are
sentence fragments or the instruction read back, a date where JSON was asked for, nothing at
all where a summary was. Each function here reads one kind of answer, keeps what is usable and
says (by returning nothing, or a reason) when nothing is; what the caller does then is its own
rule (fall back to the user's words, leave the stored summary as it was, ask before saving a
plain note).

- :func:`title_from`: the first line that says something, without markdown, quotes or a
  "Title:" label, cut at a word boundary to :data:`TITLE_WORDS` words and :data:`TITLE_CHARS`
  characters; ``""`` when nothing is left.
- :func:`tags_from`: tags normalised by the note tag type (:data:`fable_core.knowledge.types.Tag`),
  refusing phrases, punctuation and the instruction's own words; with the reason when none is left.
- :func:`json_object_from`: the JSON object in the answer (code fences and chatter around it
  allowed), or None.
- :func:`summary_from`: the answer as a summary, or why it is none (empty, an echo of the prompt).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from fable_core.knowledge.types import Tag

__all__ = ["TAG_CHARS", "TAG_WORDS", "TITLE_CHARS", "TITLE_WORDS", "Tags", "cut", "echoes", "json_object_from",
           "summary_from", "tags_from", "title_from"]

TITLE_WORDS = 8
TITLE_CHARS = 60
TAG_WORDS = 3    # per level of a hierarchy: "city-trips", "work/acme-corp"
TAG_CHARS = 30

_MARKUP = re.compile(r"^(?:#{1,6}\s+|[-*•>]\s+|\d{1,2}[.)]\s+)+")
_TITLE_LABEL = re.compile(r"^(?:(?:a|the|new|short|suggested|conversation|chat|note|task)\s+)*title\s*[:—–]\s*",
                          re.IGNORECASE)
_QUOTES = "\"'\u201c\u201d\u2018\u2019«»`"  # straight, curly and angle quotes, backticks
_EMPHASIS = re.compile(r"\*\*|__|[*`]")
_TRAILING = ".,;:-–— "


def title_from(answer: str) -> str:
    """The title in a model's answer, cleaned and cut; ``""`` when it holds none.

    The first line that says something counts: blank lines, a bare "Title:" and an
    introduction ending in ':' ("Sure! Here is a title:") are passed over."""
    for raw in answer.splitlines():
        line = _TITLE_LABEL.sub("", _EMPHASIS.sub("", _MARKUP.sub("", raw.strip()))).strip()
        if line.endswith(":"):
            continue
        title = cut(" ".join(line.strip(_QUOTES + " ").split()).rstrip(_TRAILING).strip(_QUOTES))
        if _WORDS.search(title):
            return title
    return ""


def cut(text: str, words: int = TITLE_WORDS, chars: int = TITLE_CHARS) -> str:
    """``text``'s first line, at most ``words`` words and ``chars`` characters, cut at a word
    boundary (a first word longer than ``chars`` is cut inside)."""
    lines = text.strip().splitlines()
    first = lines[0].split() if lines else []
    kept: list[str] = []
    for word in first[:words]:
        if len(" ".join([*kept, word])) > chars:
            break
        kept.append(word)
    title = " ".join(kept) if kept or not first else first[0][:chars]
    return title.rstrip(_TRAILING)


# --- tags --------------------------------------------------------------------------------------

_TAG = TypeAdapter(Tag)
_TAGS_LABEL = re.compile(r"^[^,\n:]{0,40}\btags?\b[^,\n:]{0,20}:\s*", re.IGNORECASE)
_PUNCTUATION = re.compile(r"[:;!?()\[\]{}\"'=<>|\\\u201c\u201d\u2018\u2019]|\.(?!\w)|(?<!\w)\.")
_WORDS = re.compile(r"[^\W_]+")
# Words that make a phrase a sentence rather than a tag: articles, pronouns, auxiliaries.
_SENTENCE_WORDS = frozenset((
    "a", "an", "the", "this", "that", "these", "those", "i", "you", "he", "she", "we", "they", "me", "my",
    "your", "our", "their", "is", "are", "was", "were", "am", "been", "would", "should", "could", "wants"))


@dataclass
class Tags:
    """Tags read from an answer: the usable ones in order, and each refused one with why."""

    tags: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def reason(self) -> str:
        """Why there are no tags, in a sentence (``""`` when there are)."""
        if self.tags:
            return ""
        if self.skipped and not self.refused:
            return "the note already has every tag the model suggested"
        if not self.refused:
            return "the model suggested no tags"
        shown = "; ".join(f"{raw!r} ({why})" for raw, why in list(self.refused.items())[:3])
        return f"the model suggested no usable tags: {shown}"


def tags_from(answer: str, instruction: str, *, keep: Collection[str] = (), skip: Collection[str] = ()) -> Tags:
    """The tags in a comma- or line-separated answer, normalised like a note's tags.

    Refused: a piece with sentence punctuation (':', '?', '!', a '.' that ends a word), more
    than :data:`TAG_WORDS` words per level or :data:`TAG_CHARS` characters, sentence words
    ("the", "you", "wants"), words of the ``instruction`` read back, duplicates, and ``skip``
    (tags the note already has). Tags in ``keep`` (the user's own tags) are never refused as
    echoes or phrases."""
    found = Tags()
    echo = _words(instruction)
    answer = _TAGS_LABEL.sub("", answer.strip()).rstrip(". \n")
    for raw in re.split(r"[,\n]", answer):
        piece = _MARKUP.sub("", raw.strip()).strip(" -*•")
        if not piece:
            continue
        tag, why = _tag(piece, echo, keep)
        if tag is None:
            found.refused[piece] = why
        elif tag in skip:
            found.skipped.append(tag)
        elif tag in found.tags:
            continue
        else:
            found.tags.append(tag)
    return found


def _tag(piece: str, echo: list[str], keep: Collection[str]) -> tuple[str | None, str]:
    if _PUNCTUATION.search(piece):
        return None, "punctuation"
    try:
        tag = _TAG.validate_python(re.sub(r"\s+", "-", piece))
    except ValidationError:
        return None, "not a tag"
    if tag in keep:
        return tag, ""
    words = _WORDS.findall(tag)
    if len(tag) > TAG_CHARS or any(len(_WORDS.findall(level)) > TAG_WORDS for level in tag.split("/")):
        return None, "too long"
    if _SENTENCE_WORDS.intersection(words):
        return None, "a phrase"
    if _contains(echo, words):
        return None, "the instruction read back"
    return tag, ""


# --- JSON, summaries ---------------------------------------------------------------------------


def json_object_from(answer: str) -> dict[str, Any] | None:
    """The JSON object in an answer (from its first '{' to its last '}'), or None."""
    match = re.search(r"\{.*\}", answer, re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


_SUMMARY_LABEL = re.compile(r"^\s*(?:here is (?:a|the) )?summary\s*:\s*", re.IGNORECASE)


def summary_from(answer: str, instruction: str, prompt: str) -> tuple[str, str]:
    """The answer as a summary (trimmed, without a "Summary:" label) and ``""``; or ``""`` and
    why it is none: the answer is empty, or it echoes the ``instruction`` or the ``prompt``."""
    text = _SUMMARY_LABEL.sub("", answer.strip()).strip()
    if not _WORDS.search(text):
        return "", "the model's answer was empty"
    if echoes(text, instruction, prompt):
        return "", "the model's answer repeated the prompt"
    why = ungrounded(text, prompt)
    return ("", why) if why else (text, "")


_FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?")
_SCALE = re.compile(r"\b(thousand|million|billion|trillion)s?\b", re.IGNORECASE)
_INSTRUCTIONS = re.compile(r"\b(?:your (?:response|answer|reply) (?:should|must|will)|as an ai\b|"
                           r"(?:answer|respond|reply) (?:with|in) (?:exactly|only|at most)|you are (?:an?|the) "
                           r"(?:assistant|ai|language model))", re.IGNORECASE)
SMALL_COUNT = 12  # counts a summary may say without its sources spelling them ("3 tasks")


def ungrounded(answer: str, sources: str) -> str:
    """Why ``answer`` cannot be stored as what the model made of ``sources`` (``""`` when it
    can): it is JSON, it reads out instructions, or it has figures its sources do not (a number
    over :data:`SMALL_COUNT`, a "million": a small model invents amounts and dates)."""
    text = answer.strip()
    if text[:1] in "{[" or text.startswith("```"):
        return "the model's answer was JSON, not words"
    if _INSTRUCTIONS.search(text):
        return "the model's answer read out instructions"
    known = {f.replace(",", "") for f in _FIGURE.findall(sources)}
    missing = [m.lower() for m in _SCALE.findall(text) if m.lower() not in sources.lower()]
    for figure in _FIGURE.findall(text):
        value = figure.replace(",", "").rstrip(".")
        if value not in known and not (value.isdigit() and int(value) <= SMALL_COUNT):
            missing.append(value)
    if missing:
        return f"the model's answer has figures its sources do not: {', '.join(dict.fromkeys(missing))}"
    return ""


_TITLE_STOP = frozenset({*_SENTENCE_WORDS, "and", "or", "of", "for", "to", "in", "on", "at", "with", "from",
                         "by", "about", "how", "what", "why", "when", "do", "does", "vs"})


def drawn_from(title: str, transcript: str) -> bool:
    """Whether each word of ``title`` that carries meaning is one of the conversation's, in any
    form ("Baking" from "bake"): its own words, never the model's claims ("Completed" for a task
    nobody completed) or its instructions ("Your response should contain...")."""
    said = {_stem(w) for w in _words(transcript)}
    return all(_stem(w) in said for w in _words(title) if w not in _TITLE_STOP)


def _stem(word: str) -> str:
    """A word without its English inflection, enough to match "planning" with "plan"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[:-len(suffix)]
            break
    word = word.removesuffix("e") if len(word) > 3 else word
    return word[:-1] if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou" else word


def echoes(answer: str, instruction: str, prompt: str = "") -> bool:
    """Whether ``answer`` reads its prompt back: it begins like the ``instruction`` or the
    ``prompt`` (their first words, up to six), or its three-word runs come mostly (60 %) from
    the instruction or almost all (90 %) from the two: a good answer may quote the prompt's
    content, but neither opens with it nor copies it whole."""
    words = _words(answer)
    for source in (instruction, prompt):
        start = _words(source)[:min(6, len(words))]
        if start and len(start) >= min(3, len(words)) and words[:len(start)] == start:
            return True
    runs = _runs(words)
    told = _runs(_words(instruction))
    return bool(runs) and (len(runs & told) >= 0.6 * len(runs)
                           or len(runs & (told | _runs(_words(prompt)))) >= 0.9 * len(runs))


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def _runs(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + 3]) for i in range(len(words) - 2)}


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))
