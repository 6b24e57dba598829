"""What every web handler shares: the core and the web services built around it, per app."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from fable_core.identity.oidc import OidcClient
from fable_core.runtime import Fable
from fable_web.auth import Authenticator
from fable_web.ratelimit import RateLimiter
from fable_web.sessions import SessionCodec

__all__ = ["WebContext", "web"]


@dataclass(frozen=True, slots=True)
class WebContext:
    fable: Fable
    sessions: SessionCodec
    auth: Authenticator
    limiter: RateLimiter
    oidc: OidcClient

    @classmethod
    def build(cls, fable: Fable) -> WebContext:
        s = fable.settings
        sessions = SessionCodec(s.secret_key(), secure=s.secure_cookies)
        return cls(
            fable=fable,
            sessions=sessions,
            auth=Authenticator(fable, sessions),
            limiter=RateLimiter(fable.db, trust_proxy_headers=s.trust_proxy_headers,
                                hops=s.trusted_proxy_hops),
            oidc=OidcClient(s),
        )


def web(request: Request) -> WebContext:
    return request.app.state.web  # type: ignore[no-any-return]
