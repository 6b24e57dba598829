"""What each user wants pushed to their devices: the ``notifications`` setting.

Every notification reaches the inbox; this only decides which are also sent by Web Push to the
devices the user subscribed. Declared here with :func:`~fable_core.tools.preferences.setting`, so
the settings tools, REST and UI list and validate it with every other key.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from fable_core.people.notifications.notify import KINDS, NotificationKind
from fable_core.tools.preferences import setting

__all__ = ["NOTIFICATIONS", "NotificationPrefs"]


class NotificationPrefs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    push: bool = Field(True, description="Send notifications to the devices you subscribed (Web Push).")
    push_kinds: list[NotificationKind] = Field(
        default_factory=lambda: list(KINDS),
        description="Which kinds are pushed: share, unshare, group, answer, due.")

    def pushes(self, kind: str) -> bool:
        return self.push and kind in self.push_kinds


NOTIFICATIONS = setting("notifications", NotificationPrefs, NotificationPrefs(),
                        "Which notifications are pushed to your devices (all kinds reach the inbox).")
