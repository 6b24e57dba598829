"""The knowledge domain: notes (tasks are notes), wikilinks, versions, search, projects, milestones,
work logs, tags and backlinks, drafts, the trash, people, places and lists."""
