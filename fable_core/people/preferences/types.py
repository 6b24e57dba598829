"""Value types the setting keys share: a time zone that exists, a line of text, a model name.

Each refuses a bad value with a message that says what a good one looks like; a time zone that
is nearly right names the one it probably is (``Europe/paris``: ``Europe/Paris``).
"""

from __future__ import annotations

import functools
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import AfterValidator, StringConstraints

from fable_core.tools.suggest import closest, hint

__all__ = ["ModelName", "OneLine", "TimeZoneName", "check_zone"]


@functools.cache
def _zones() -> frozenset[str]:
    # a walk of the system's zone files (tens of ms): only when a name was wrong
    return frozenset(available_timezones())


def check_zone(name: str) -> str:
    """``name`` if it is an IANA time zone this machine knows; ValueError otherwise."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        matches = closest(name, _zones())
        advice = hint(matches) or "use an IANA name such as 'Europe/Paris', 'America/New_York' or 'UTC'"
        raise ValueError(f"{name[:64]!r} is not a known time zone; {advice}") from None
    return name


def _one_line(text: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ValueError("must be one line of text, without control characters")
    return text


TimeZoneName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64),
                         AfterValidator(check_zone)]
OneLine = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40),
                    AfterValidator(_one_line)]
ModelName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200,
                                             pattern=r"^[\w.\-/:]+$")]
