"""Types and constants the outside-world tests share with their fixtures (tests/outside/conftest.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx

from fable_core.tools.caller import Caller

__all__ = ["TIMEOUT", "Api", "Call"]

TIMEOUT = 1.0  # FABLE_SEARXNG_TIMEOUT of the Fable under test
Api = Callable[[Caller], AbstractAsyncContextManager[httpx.AsyncClient]]
Call = Callable[..., Awaitable[dict[str, Any]]]
