"""A configured SearXNG that does not answer is said once, at start, naming SEARXNG_URL (issue 37
item 10), not first found out by a research run minutes later; one that answers says nothing."""

from __future__ import annotations

import logging

import pytest
from support.fables import fable_with
from support.pace import scaled
from support.said import lines_said

from fable_core.config import Settings

_SAID = "SearXNG at SEARXNG_URL="


async def test_a_searxng_that_does_not_answer_is_said_once_at_start(
    settings: Settings, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "fable_core.outside.websearch.searxng")
    async with fable_with(settings, searxng_url="http://127.0.0.1:9", migrate=False):
        [said] = await lines_said(caplog, _SAID, scaled(10))
    assert "http://127.0.0.1:9 does not answer" in said and "set SEARXNG_URL" in said


async def test_a_searxng_that_answers_says_nothing(
    settings: Settings, searxng_url: str, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "fable_core.outside.websearch.searxng")
    async with fable_with(settings, searxng_url=searxng_url, migrate=False):
        assert await lines_said(caplog, _SAID, 1.0) == []
