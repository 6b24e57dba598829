"""Real, tiny images for tests (a browser draws them): PNGs of one colour, made here."""

from __future__ import annotations

import struct
import zlib

__all__ = ["png"]


def png(red: int = 200, green: int = 40, blue: int = 40, size: int = 2) -> bytes:
    """A ``size`` × ``size`` PNG of one colour: each colour a different image (another hash)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes((red, green, blue)) * size
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(row * size)) + chunk(b"IEND", b""))
