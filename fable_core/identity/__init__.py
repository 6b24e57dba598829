"""Who is calling: accounts, passwords, sign-in sessions, API keys, invitations, OpenID Connect,
OAuth, the revocations every replica hears, and what admins and operators do to accounts."""
