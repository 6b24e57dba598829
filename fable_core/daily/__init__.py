"""The day: the calendar and CalDAV sync, the journal and its morning note, moments, weather."""
