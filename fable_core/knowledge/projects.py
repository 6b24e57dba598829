"""Projects and milestones. (Tools are added by the knowledge-domain work.)"""

from __future__ import annotations
