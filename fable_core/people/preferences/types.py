"""Value types the setting keys share: a line of text, a model name (a time zone is the
kernel's: :data:`fable_core.tools.clock.TimeZoneName`).

Each refuses a bad value with a message that says what a good one looks like.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, StringConstraints

__all__ = ["ModelName", "OneLine"]


def _one_line(text: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ValueError("must be one line of text, without control characters")
    return text


OneLine = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40),
                    AfterValidator(_one_line)]
ModelName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200,
                                             pattern=r"^[\w.\-/:]+$")]
