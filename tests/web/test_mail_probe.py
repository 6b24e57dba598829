"""A configured mail server that does not answer is said once, at start (issue 37 item 10), naming
where it is set; one that answers, or none configured, says nothing."""

from __future__ import annotations

import logging

import pytest
from support.fables import fable_with
from support.pace import scaled
from support.said import lines_said
from support.smtp import smtp_server

from fable_core.config import Settings

_SAID = "the mail server at "


async def test_a_mail_server_that_does_not_answer_is_said_once_at_start(
    settings: Settings, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "fable_core.admin.mail_probe")
    async with fable_with(settings, smtp_host="127.0.0.1", smtp_port=9, migrate=False):
        [said] = await lines_said(caplog, _SAID, scaled(10))
    assert said.startswith("the mail server at 127.0.0.1:9 (SMTP_HOST) does not answer") and "check SMTP_HOST" in said


async def test_a_mail_server_that_answers_says_nothing(settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "fable_core.admin.mail_probe")
    async with smtp_server() as (_, port), fable_with(settings, smtp_host="127.0.0.1", smtp_port=port,
                                                       migrate=False):
        assert await lines_said(caplog, _SAID, 1.0) == []
