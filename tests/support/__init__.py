"""Helpers every test directory shares (``from support.servers import serve``)."""
