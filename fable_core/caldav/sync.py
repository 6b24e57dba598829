"""The two-way sync (after the events model lands)."""

from __future__ import annotations
