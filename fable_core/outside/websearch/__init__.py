"""Searching the web through the operator's SearXNG: the client, and the ``web_search`` tool."""
