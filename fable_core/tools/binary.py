"""Bytes in and out of tools: the :class:`Blob` result and the :data:`Binary` argument.

Most results are JSON; an image is not. A tool returning a :class:`Blob` is served raw by each
surface: REST answers with its bytes, its ``content_type`` and its ``headers``; MCP returns it
as an ``ImageContent`` block (or an embedded resource for other types); the CLI writes the bytes
to stdout or ``--output``; the assistant's model is told what it is, never shown base64. JSON
surfaces (``Dispatcher.call``) carry ``content`` as base64.

A tool returning a :class:`Download` streams: its ``chunks`` (an async iterator of bytes) are
produced while the surface sends them, so an archive of any size never sits in memory. REST
answers with a ``StreamingResponse`` and ``Content-Disposition: attachment``; the CLI writes the
chunks to ``--output`` (or stdout) as they come; JSON surfaces get only its description
(``content_type``, ``filename``): such tools are for devices (``agents=False``). The iterator
runs after the call returned, so it opens its own short database phases (``ctx.reading()``).

A parameter typed :data:`Binary` takes bytes: base64 text from JSON surfaces (MCP, the
assistant, ``POST /api/tools/{name}``), and on the tool's own REST route also the raw request
body (any content type but JSON; the other arguments then come from the query string) or a
``multipart/form-data`` file field of its name. A tool has at most one such parameter.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator
from typing import Annotated, Any, ClassVar, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

__all__ = ["MAX_BINARY", "Binary", "Blob", "Download", "is_binary"]

MAX_BINARY = 64_000_000
"""Bytes no Binary argument may exceed, whatever the tool's own (smaller) limit: decoding more
base64 than this is refused before it is attempted."""


class _BinaryArgument:
    """The marker :func:`is_binary` finds in a parameter's ``Annotated`` metadata."""


def _decode(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) > MAX_BINARY * 4 // 3 + 4:
            raise ValueError(f"more than {MAX_BINARY} bytes")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as e:
            raise ValueError("not valid base64") from e
    return value


Binary = Annotated[
    bytes,
    _BinaryArgument(),
    BeforeValidator(_decode),
    Field(min_length=1, max_length=MAX_BINARY),
    WithJsonSchema({"type": "string", "contentEncoding": "base64"}),
]
"""Bytes an argument carries: base64 in JSON, the raw body or a multipart file on REST."""


def is_binary(annotation: Any) -> bool:
    """Whether a parameter's annotation is :data:`Binary` (possibly narrowed further)."""
    return any(isinstance(m, _BinaryArgument) for m in get_args(annotation)[1:])


class Blob(BaseModel):
    """A binary result: ``content`` served as ``content_type`` with ``headers`` (cache and
    safety headers a surface that speaks HTTP sends with it)."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    content: bytes
    content_type: str
    headers: dict[str, str] = Field(default_factory=dict)

    def described(self) -> dict[str, Any]:
        """What a reader that cannot take bytes (a language model) is told instead."""
        return {"content_type": self.content_type, "bytes": len(self.content),
                "note": "binary content, not shown here"}


class Download(BaseModel):
    """A streamed binary result: ``chunks`` served as ``content_type``, saved as ``filename``.

    Only the description serialises (``chunks`` is excluded): what a JSON surface returns."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    media_types: ClassVar[tuple[str, ...]] = ()  # what it may be served as (OpenAPI lists them); () any

    content_type: str
    filename: str
    headers: dict[str, str] = Field(default_factory=dict)
    chunks: SkipJsonSchema[Any] = Field(default=None, exclude=True)

    def stream(self) -> AsyncIterator[bytes]:
        """The bytes, chunk by chunk (once: the iterator is consumed)."""
        chunks: AsyncIterator[bytes] = self.chunks
        return chunks

    def described(self) -> dict[str, Any]:
        """What a reader that cannot take a stream (a language model, a JSON client) is told."""
        return {"content_type": self.content_type, "filename": self.filename,
                "note": "a download: fetch it over REST or the CLI"}
