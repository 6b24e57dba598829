"""Types the draft tests share with their fixtures."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx

from fable_core.tools.caller import Caller

Rest = Callable[[Caller], AbstractAsyncContextManager[httpx.AsyncClient]]
Call = Callable[..., Awaitable[dict[str, Any]]]
