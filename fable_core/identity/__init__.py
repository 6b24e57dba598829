"""Who is calling: accounts, passwords, sign-in sessions, API keys, invitations, OpenID Connect,
OAuth, and the revocations every replica hears."""
