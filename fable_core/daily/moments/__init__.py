"""Moments: what happened to a user, in their words, at a time, with an optional mood, tags and
place; recorded by them or by the assistant from a conversation, found again by words or by
meaning, and shown in the morning note."""
