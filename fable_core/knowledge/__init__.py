"""The knowledge domain: notes (tasks are notes), wikilinks, versions, projects, milestones."""
