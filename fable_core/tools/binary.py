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

A parameter typed :data:`BinaryFile` takes the same, but the tool gets an :class:`Upload`: a
seekable file of the bytes. On the tool's own REST route the body is spooled to a temporary file
as it arrives (never held in memory), so such an argument may be as large as the tool's body
limit (``@tool(body_limit=...)``, which the HTTP layer honours on that route); from JSON surfaces
it is decoded base64, at most :data:`MAX_BINARY` bytes.
"""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import AsyncIterator
from typing import IO, Annotated, Any, ClassVar, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

__all__ = ["MAX_BINARY", "Binary", "BinaryFile", "Blob", "Download", "Upload", "is_binary", "is_spooled"]

MAX_BINARY = 64_000_000
"""Bytes no Binary argument may exceed, whatever the tool's own (smaller) limit: decoding more
base64 than this is refused before it is attempted."""


class _BinaryArgument:
    """The marker :func:`is_binary` finds in a parameter's ``Annotated`` metadata; ``spooled``:
    the argument is an :class:`Upload` (a file), not bytes."""

    def __init__(self, *, spooled: bool = False) -> None:
        self.spooled = spooled


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


class Upload:
    """A :data:`BinaryFile` argument: ``size`` bytes in ``file`` (seekable, positioned at 0)."""

    __slots__ = ("file", "size")

    def __init__(self, file: IO[bytes], size: int) -> None:
        self.file, self.size = file, size

    def __repr__(self) -> str:
        return f"Upload({self.size} bytes)"


def _upload(value: Any) -> Upload:
    if isinstance(value, Upload):
        if value.size < 1:
            raise ValueError("the upload is empty")
        return value
    value = _decode(value)
    if isinstance(value, bytes | bytearray):
        if not value:
            raise ValueError("should have at least 1 byte")
        if len(value) > MAX_BINARY:
            raise ValueError(f"more than {MAX_BINARY} bytes")
        return Upload(io.BytesIO(value), len(value))
    raise ValueError("should be bytes (base64 text in JSON)")


BinaryFile = Annotated[
    Upload,
    _BinaryArgument(spooled=True),
    PlainValidator(_upload),
    WithJsonSchema({"type": "string", "contentEncoding": "base64"}),
]
"""Bytes an argument carries as a file: base64 in JSON, the raw body (spooled to disk) or a
multipart file on REST."""


def is_binary(annotation: Any) -> bool:
    """Whether a parameter's annotation is :data:`Binary` or :data:`BinaryFile` (possibly narrowed further)."""
    return any(isinstance(m, _BinaryArgument) for m in get_args(annotation)[1:])


def is_spooled(annotation: Any) -> bool:
    """Whether a parameter's annotation is :data:`BinaryFile`."""
    return any(isinstance(m, _BinaryArgument) and m.spooled for m in get_args(annotation)[1:])


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
