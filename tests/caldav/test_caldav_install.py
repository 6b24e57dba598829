"""caldav's HTTP library (niquests) brings urllib3-future, whose wheel overwrites urllib3 in place:
installed as the Makefile and Dockerfile install it, urllib3 stays urllib3 (requests and the
OpenAPI fuzzer run on it) and niquests uses the fork beside it."""

from __future__ import annotations

import importlib.util

import niquests._compat
import urllib3


def test_urllib3_is_not_replaced_by_the_fork_niquests_brings() -> None:
    patch = int(urllib3.__version__.split(".")[-1])
    assert patch < 900, (f"urllib3 {urllib3.__version__} is urllib3-future: reinstall it with URLLIB3_NO_OVERRIDE=1 "
                         "PIP_NO_BINARY=urllib3-future, then urllib3 itself (docs/caldav.md)")
    assert niquests._compat.HAS_LEGACY_URLLIB3 and importlib.util.find_spec("urllib3_future") is not None
