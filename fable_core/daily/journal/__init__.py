"""The daily journal: one conversation a day, opened by a morning note prepared in the background
from what the other domains gather for that day (:mod:`fable_core.daily.journal.sections`)."""
