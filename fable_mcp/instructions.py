"""The ``instructions`` text an MCP server sends on connect: how Fable's tools fit together."""

from __future__ import annotations

from fable_core.tools.conventions import CONVENTIONS

__all__ = ["INSTRUCTIONS"]

INSTRUCTIONS = f"""\
Fable holds the user's notes, tasks and projects.
{CONVENTIONS}
- More tools (calendar sync, feeds, sharing, people, research, images...) are in toolsets: \
find_tools "what you want to do" or enable_toolset, then call them.
- Errors come back as tool results starting with their type (not_found, conflict, \
invalid_input, forbidden...) and say what to do next.
- Notes are also resources (fable://notes/{{id}}, fable://projects/{{id}}); prompts offer a \
daily review, a project summary and turning a note into tasks."""
