"""Process-wide machinery every domain runs on: background jobs, live streams and change events,
the SSRF guard, TLS, rate limits, the CPU pool and the event loop's watch, MCP session records,
sealed secrets."""
