"""docs/api.md stays true: its route table is the registry's, and every route it names exists."""

from __future__ import annotations

import re

from starlette.applications import Starlette
from starlette.routing import Route

from fable_core.tools import REGISTRY
from fable_web.apidocs import API_MD, END, START, routes_table

DOC = API_MD.read_text()


def test_route_table_is_generated_from_the_registry() -> None:
    table = DOC[DOC.index(START) + len(START): DOC.index(END)].strip()
    assert table == routes_table(REGISTRY), "run: python -m fable_web.apidocs"


def test_every_route_the_docs_name_exists(app: Starlette) -> None:
    served = {
        (method, route.path)
        for route in app.routes if isinstance(route, Route)
        for method in (route.methods or ())
    }
    named = set(re.findall(r"`(GET|POST|PUT|PATCH|DELETE) (/api/[^` ?]*)", DOC))
    normalised = {(m, re.sub(r"{\w+(:\w+)?}", "{id}", p)) for m, p in served}  # parameter names aside
    missing = {(m, re.sub(r"{\w+}", "{id}", p)) for m, p in named} - normalised
    assert not missing
    assert len(named) > 40
