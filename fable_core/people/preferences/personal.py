"""The settings every user has beside their time zone (:data:`fable_core.tools.clock.TIMEZONE`):
what the assistant is called and which model it answers with, which shape the in-app
assistant's chat turns (:mod:`fable_core.assistant.chat`).
"""

from __future__ import annotations

from fable_core.people.preferences.types import ModelName, OneLine
from fable_core.tools import clock  # noqa: F401  declared first: the settings list starts with the time zone
from fable_core.tools.preferences import setting

__all__ = ["ASSISTANT_NAME", "DEFAULT_MODEL"]

ASSISTANT_NAME = setting("assistant_name", OneLine | None, None,
                         "What the in-app assistant calls itself (up to 40 characters).")
DEFAULT_MODEL = setting("default_model", ModelName | None, None,
                        "The model your chats use; unset: the server's chat model.")
