"""Fable as its own OAuth 2.1 authorization server, so MCP clients connect by URL.

- :mod:`fable_core.identity.oauth.clients`: registered clients (RFC 7591) and their redirect URIs;
- :mod:`fable_core.identity.oauth.server`: authorization requests, codes (PKCE S256), access and refresh
  tokens (RFC 8707 resource, rotation with reuse detection), revocation (RFC 7009), and the
  caller an access token stands for;
- :mod:`fable_core.identity.oauth.connections`: the tools people and admins manage them with.

The HTTP endpoints (metadata, register, authorize, token, revoke, the consent page's API) are
in :mod:`fable_web.oauth_api`; RFC 6749 errors are Authlib's (``authlib.oauth2.rfc6749.errors``).
"""
