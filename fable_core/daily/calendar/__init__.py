"""The calendar: each user's own events, timed (in UTC, with the zone they were made in) or
all-day (dates), recurring by RRULE with exceptions and changed occurrences; listed by range in
the user's zone, and the day's events in the morning note.

:mod:`.service` creates, changes and deletes events for a caller in an open session (the tools
and CalDAV sync both go through it); :mod:`.occurrences` lists what falls in a range;
:mod:`.events` is the tools; :mod:`.prep` the morning note's section.
"""
