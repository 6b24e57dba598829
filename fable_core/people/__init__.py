"""People and what they share: shares and groups, notifications, the assistant's profile of a
user, and their settings."""
