"""The trash: deleted notes kept, restorable, for ``FABLE_TRASH_DAYS`` (see :mod:`.bin`)."""
