"""What comes from other sites: web search, research runs, feeds, images; every fetch through
the SSRF guard."""
