"""Process-wide machinery every domain runs on: the streams of long-running generations (answers,
research runs), change events, the SSRF guard and the page reader, TLS, rate limits, the CPU pool
and the event loop's watch, MCP session records, sealed secrets."""
