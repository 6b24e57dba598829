"""People, places and lists: notes with a structure (``notes.entity`` and ``notes.fields``)."""
