"""What every tool has in common, said once: the MCP server's instructions carry it, so that no
tool repeats it in its own description or in each of its parameters (every tool list a model
reads pays for each repetition). The assistant's own system prompt stays shorter: a small local
model pays for every token of it on every turn."""

from __future__ import annotations

__all__ = ["CONVENTIONS"]

CONVENTIONS = """\
- Tasks are notes with a status (todo, in_progress, done, cancelled); create them with \
create_note (give a status, priority or due_date) and finish them with complete_task.
- Titles are unique per user: create_note refuses a duplicate and names the existing note; \
update that note instead.
- Link notes with [[Their Title]] in a body; get_backlinks follows links backwards.
- Tags are lower-case and hierarchical: 'work/acme' is under 'work', and 'work' matches both.
- Wherever a tool takes project_id it also takes `project`, the project's name in words \
(exact, then partial, then fuzzy match); an ambiguous name is refused with the candidates.
- Dates are ISO (2026-12-24); "today" is in the user's time zone.
- Results are compact: empty and null fields are left out, lists omit bodies (read_note reads \
one, in parts with section or max_chars). Lists are paged: pass next_cursor back as cursor."""
