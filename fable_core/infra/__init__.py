"""Process-wide machinery every domain runs on: live streams and change events, the SSRF guard and
the page reader, TLS, rate limits, the CPU pool and the event loop's watch, MCP session records,
sealed secrets."""
