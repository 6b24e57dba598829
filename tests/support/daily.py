"""Types and constants the daily tests share with their fixtures (tests/daily/conftest.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx

from fable_core.tools.caller import Caller

__all__ = ["TIMEOUT", "Api", "Call"]

TIMEOUT = 2.0  # FABLE_WEATHER_TIMEOUT of the Fable under test (a 503 answered past 1 s on a loaded machine)
Api = Callable[[Caller], AbstractAsyncContextManager[httpx.AsyncClient]]
Call = Callable[..., Awaitable[dict[str, Any]]]
