"""Export: a user's own data as a Markdown ZIP or one JSON document, streamed (``export_data``)."""
