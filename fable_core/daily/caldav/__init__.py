"""CalDAV two-way sync of each user's events with their own CalDAV server (see docs/caldav.md)."""
