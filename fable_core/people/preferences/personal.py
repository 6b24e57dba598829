"""The settings every user has: their time zone, and what the assistant is called and which
model it answers with.

``timezone`` is what "today", "overdue" and "this week" mean for the user
(:mod:`fable_core.tools.clock` reads it); ``assistant_name`` and ``default_model`` shape
the in-app assistant's chat turns (:mod:`fable_core.assistant.chat`).
"""

from __future__ import annotations

from fable_core.people.preferences.types import ModelName, OneLine, TimeZoneName
from fable_core.tools.preferences import setting

__all__ = ["ASSISTANT_NAME", "DEFAULT_MODEL", "TIMEZONE"]

TIMEZONE = setting("timezone", TimeZoneName, "UTC",
                   "Your IANA time zone (Europe/Paris): what today, overdue and due dates mean.")
ASSISTANT_NAME = setting("assistant_name", OneLine | None, None,
                         "What the in-app assistant calls itself (up to 40 characters).")
DEFAULT_MODEL = setting("default_model", ModelName | None, None,
                        "The model your chats use; unset: the server's chat model.")
