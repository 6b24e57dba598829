"""Per-user settings: a typed key/value store (default model, assistant name, time zone,
journal and notification preferences); unknown keys and bad values are refused."""
