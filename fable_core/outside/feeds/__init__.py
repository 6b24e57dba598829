"""RSS and Atom feeds: subscriptions, their refresh (scheduled and on demand, conditional GET
through the SSRF guard), and their items, listed, searched and saved as notes."""
