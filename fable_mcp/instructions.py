"""The ``instructions`` text an MCP server sends on connect: how Fable's tools fit together."""

from __future__ import annotations

__all__ = ["INSTRUCTIONS"]

INSTRUCTIONS = """\
Fable holds the user's notes, tasks and projects.
- Tasks are notes with a status (todo, in_progress, done, cancelled); create them with \
create_note (give a status, priority or due_date) and finish them with complete_task.
- Titles are unique per user: create_note refuses a duplicate and names the existing note; \
update that note instead.
- Link notes with [[Their Title]] in a body; get_backlinks follows links backwards.
- Tags are lower-case and hierarchical: 'work' also matches 'work/acme'.
- Projects can be named in words (project="Website"); an ambiguous name is refused with \
the candidates, then pass project_id.
- Results are compact: lists omit bodies (read_note reads one, in parts with section or \
max_chars). Lists are paged: pass next_cursor back as cursor.
- Errors come back as tool results starting with their type (not_found, conflict, \
invalid_input, forbidden...) and say what to do next.
- Notes are also resources (fable://notes/{id}, fable://projects/{id}); prompts offer a \
daily review, a project summary and turning a note into tasks."""
