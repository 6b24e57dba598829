"""Browsing many notes: title suggestions (the quick switcher, ``[[`` completion), the tag tree
and the graph of notes, tags and projects."""
