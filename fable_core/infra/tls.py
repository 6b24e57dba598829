"""One certificate store for Fable's outbound HTTPS clients, loaded once.

Loading the system's (certifi's) store costs ~30 ms of CPU; an ``httpx.AsyncClient`` made per
request (a fetch through the SSRF guard, a SearXNG search) would pay it every time: for a
research run's 5 searches and 15 pages, half a second. An ``ssl.SSLContext`` is safe to share.
"""

from __future__ import annotations

import functools
import ssl

import httpx

__all__ = ["tls_context"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The verifying context every client passes as ``verify=``."""
    return httpx.create_ssl_context()
