"""Synthetic but realistic notes: markdown bodies, hierarchical tags, wikilinks between titles.

Deterministic for a seed, so runs are comparable. Titles are built from a pseudo-word vocabulary
so that they are distinct enough not to trip create_note's fuzzy duplicate check (>= 0.82).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Corpus", "NoteSpec", "describe_bodies"]

_COMMON = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "by", "this", "are",
    "from", "at", "or", "have", "an", "not", "but", "we", "can", "all", "which", "their", "will", "one", "more",
    "about", "if", "there", "so", "what", "up", "out", "when", "use", "them", "into", "some", "time", "could", "these",
    "two", "may", "then", "do", "first", "any", "my", "now", "such", "like", "our", "over", "also", "new", "after",
    "most", "plan", "meeting", "review", "draft", "idea", "budget", "design", "release", "follow", "task", "project",
    "reading", "health", "garden", "travel", "recipe", "book", "client", "invoice", "sprint", "retro", "backlog",
    "roadmap", "research", "interview", "summary", "decision", "question", "answer", "risk", "metric", "goal", "habit",
    "workout", "family", "friend", "weekend",
]
_ONSETS = [
    "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "cr", "dr", "fl",
    "gr", "pl", "st", "tr", "sh", "ch", "th",
]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou"]
_CODAS = ["", "n", "r", "s", "t", "l", "m", "x", "nd", "rk", "st"]
_TAG_ROOTS = {
    "project": ["alpha", "beacon", "cobalt", "delta", "ember", "fjord"],
    "area": ["health", "finance", "home", "career", "learning"],
    "topic": ["python", "postgres", "design", "writing", "history", "music", "cooking"],
    "status": ["draft", "review", "evergreen"],
}


@dataclass
class NoteSpec:
    title: str
    body: str
    tags: list[str]
    task: dict[str, Any] = field(default_factory=dict)

    def arguments(self) -> dict[str, Any]:
        return {"title": self.title, "body": self.body, "tags": self.tags, **self.task}


class Corpus:
    """Generates ``NoteSpec`` objects; every 5th one is a task."""

    def __init__(self, seed: int = 42, vocabulary: int = 4000) -> None:
        self.rng = random.Random(seed)
        self.words = sorted({self._pseudo_word() for _ in range(vocabulary * 2)})[:vocabulary]
        self.titles: list[str] = []
        self._seen: set[str] = set()

    def _pseudo_word(self) -> str:
        rng = self.rng
        return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.randint(1, 3))) + rng.choice(_CODAS)

    def _title(self) -> str:
        while True:
            words = self.rng.sample(self.words, self.rng.randint(4, 6))
            title = " ".join(words).capitalize()
            if title.casefold() not in self._seen:
                self._seen.add(title.casefold())
                return title

    def _sentence(self) -> str:
        rng = self.rng
        words = [rng.choice(_COMMON) if rng.random() < 0.7 else rng.choice(self.words)
                 for _ in range(rng.randint(6, 18))]
        return " ".join(words).capitalize() + "."

    def _link(self) -> str:
        if self.titles and self.rng.random() < 0.9:
            return f"[[{self.rng.choice(self.titles)}]]"
        return f"[[{self._title()}]]"  # a title that does not exist (yet)

    def _body(self) -> str:
        rng = self.rng
        parts = [" ".join(self._sentence() for _ in range(rng.randint(1, 4)))]
        for _ in range(rng.randint(0, 3)):
            parts.append(f"## {rng.choice(self.words).capitalize()} {rng.choice(_COMMON)}")
            parts.append(" ".join(self._sentence() for _ in range(rng.randint(1, 5))))
            if rng.random() < 0.4:
                parts.append("\n".join(f"- {self._sentence()}" for _ in range(rng.randint(2, 5))))
            if rng.random() < 0.1:
                parts.append("```python\nprint('hello')\n```")
        links = " ".join(self._link() for _ in range(rng.randint(0, 3)))
        if links:
            parts.append(f"See also {links}.")
        return "\n\n".join(parts)

    def _tags(self) -> list[str]:
        rng = self.rng
        roots = rng.sample(sorted(_TAG_ROOTS), rng.randint(0, 3))
        return [f"{root}/{rng.choice(_TAG_ROOTS[root])}" for root in roots]

    def note(self) -> NoteSpec:
        spec = NoteSpec(self._title(), self._body(), self._tags())
        if len(self.titles) % 5 == 4:
            spec.task = {"status": self.rng.choice(["todo", "in_progress", "done"]),
                         "priority": self.rng.choice(["low", "medium", "high"]),
                         "due_date": f"2027-{self.rng.randint(1, 12):02d}-{self.rng.randint(1, 28):02d}"}
        self.titles.append(spec.title)
        return spec

    def notes(self, count: int) -> Iterator[NoteSpec]:
        for _ in range(count):
            yield self.note()

    def query(self) -> str:
        """A search query: one or two words that occur in the corpus."""
        if self.rng.random() < 0.5:
            return self.rng.choice(self.words)
        return f"{self.rng.choice(self.words)} {self.rng.choice(_COMMON[-40:])}"


def describe_bodies(sample: int = 2000) -> str:
    """The corpus's body lengths in characters, for a bench's section: median and 10th-90th percentile."""
    lengths = sorted(len(spec.body) for spec in Corpus(seed=0).notes(sample))
    def at(q: float) -> int:
        return lengths[int(q * (len(lengths) - 1))]

    return (f"Markdown bodies of {at(0.5):,} characters median, {at(0.1):,}-{at(0.9):,} from the "
            "10th to the 90th percentile")
