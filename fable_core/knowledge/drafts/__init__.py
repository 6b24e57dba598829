"""Unsaved edits: a draft of each note a person is editing (or of the note they are starting),
saved while they type and gone when they save; and the three-way merge that reconciles their edit
with changes made meanwhile."""
