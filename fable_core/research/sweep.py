"""The job that marks research runs whose process died ``interrupted`` (:mod:`.runner`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fable_core.jobs import job
from fable_core.research.runner import sweep_interrupted

if TYPE_CHECKING:
    from fable_core.runtime import Fable

__all__ = ["interrupted_research"]


@job(every=5)
async def interrupted_research(fable: Fable) -> None:
    """Runs without a heartbeat for 15 s are interrupted."""
    await sweep_interrupted(fable.db)
