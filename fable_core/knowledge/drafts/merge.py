"""Three-way merge of two edits of one note made from the same base version: line by line
(diff3), so that edits to different sections, or different paragraphs of one, both survive.

A stretch of lines that only one side changed takes that side's lines; a stretch both sides
changed alike takes them once; a stretch both changed differently is a conflict, written with
git's markers (``<<<<<<< theirs`` / ``=======`` / ``>>>>>>> yours``) and named by the heading
of the section it is in. Titles merge the same way as one line; tags as sets (what each side
added is kept, what either removed is dropped).

Cost: two patience diffs of the base with each side (``patiencediff``, compiled: lines that
occur once anchor the match, so it stays near linear whatever the text; ``difflib`` without its
junk heuristic took 20 s for 3,000 equal lines); `merge_note_edit` runs it off the event loop
within :data:`MERGE` (:mod:`fable_core.infra.offload`), and on a 2,000-line note takes a few ms
(`bench.drafts`, docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from patiencediff import PatienceSequenceMatcher

from fable_core.infra.offload import Budget
from fable_core.knowledge.sections import outline
from fable_core.knowledge.types import MAX_BODY

__all__ = ["MERGE", "Merged", "merge_bodies", "merge_tags", "merge_title"]

MERGE = Budget("merging the edits", 3 * MAX_BODY, 5.0)

THEIRS_MARK, SPLIT_MARK, YOURS_MARK = "<<<<<<< theirs", "=======", ">>>>>>> yours"
_NO_HEADING = "(before the first heading)"


@dataclass(slots=True)
class Merged:
    text: str
    conflicts: list[str] = field(default_factory=list)  # the sections both sides changed differently


def _matches(base: list[str], other: list[str]) -> dict[int, int]:
    """For each base line kept in ``other``, where it is there (a monotone map)."""
    found: dict[int, int] = {}
    for block in PatienceSequenceMatcher(None, base, other).get_matching_blocks():
        for n in range(block.size):
            found[block.a + n] = block.b + n
    return found


def merge_bodies(base: str, theirs: str, yours: str) -> Merged:
    """``yours`` and ``theirs`` (both edits of ``base``) as one text, with the conflicts."""
    b, t, y = base.split("\n"), theirs.split("\n"), yours.split("\n")
    in_t, in_y = _matches(b, t), _matches(b, y)
    stable = [i for i in range(len(b)) if i in in_t and i in in_y]
    out: list[str] = []
    conflicts: list[str] = []
    i = j = k = 0
    for s in [*stable, len(b)]:
        end_t, end_y = (in_t[s], in_y[s]) if s < len(b) else (len(t), len(y))
        chunk_b, chunk_t, chunk_y = b[i:s], t[j:end_t], y[k:end_y]
        if chunk_t in (chunk_b, chunk_y):
            out += chunk_y
        elif chunk_y == chunk_b:
            out += chunk_t
        else:
            conflicts.append(_section_at(base, sum(len(line) + 1 for line in b[:i])))
            out += [THEIRS_MARK, *chunk_t, SPLIT_MARK, *chunk_y, YOURS_MARK]
        if s < len(b):
            out.append(b[s])
        i, j, k = s + 1, end_t + 1, end_y + 1
    return Merged("\n".join(out), list(dict.fromkeys(conflicts)))


def _section_at(body: str, offset: int) -> str:
    """The heading of the innermost section holding ``offset``."""
    inside = [s for s in outline(body) if s.start <= offset < max(s.end, s.content_start)]
    return inside[-1].title if inside else _NO_HEADING


def merge_title(base: str, theirs: str, yours: str) -> str | None:
    """The merged title, or None when both changed it differently."""
    if theirs in (base, yours):
        return yours
    return theirs if yours == base else None


def merge_tags(base: list[str], theirs: list[str], yours: list[str]) -> list[str]:
    """Theirs, plus what yours added, less what yours removed (order kept, no repeats)."""
    removed = set(base) - set(yours)
    return [tag for tag in dict.fromkeys([*theirs, *yours]) if tag not in removed and
            (tag in theirs or tag not in base)]
