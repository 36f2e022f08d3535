"""The endpoint table of docs/guides/serving.md is the app's routes, each with a curl example."""

from __future__ import annotations

import re

from starlette.routing import Mount, Route
from test_doc_examples import ROOT

from fncore import Agent, Registry
from fncore.serve import create_app
from fncore.testing import TestModel

PAGE = ROOT / "docs" / "guides" / "serving.md"
ROW = re.compile(r"^\| `(GET|POST|DELETE) (/[^`]*)` \|", re.M)
PARAMETER = re.compile(r"\{[^}]*\}")


def endpoints_section() -> str:
    """The page's ``## Endpoints`` section."""
    text = PAGE.read_text(encoding="utf-8")
    return text.split("\n## Endpoints\n", 1)[1].split("\n## ", 1)[0]


def documented() -> set[tuple[str, str]]:
    """The (method, path) rows of the endpoint table, each path parameter as ``{}``."""
    rows = ROW.findall(endpoints_section())
    return {(method, PARAMETER.sub("{}", path)) for method, path in rows}


def routed() -> set[tuple[str, str]]:
    """The (method, path) of every route of ``create_app``; a mount as ``PATH/...``."""
    app = create_app(Agent(TestModel(), registry=Registry()))
    found: set[tuple[str, str]] = set()
    for route in app.routes:
        if isinstance(route, Mount):
            found.add(("GET", f"{route.path}/..."))
            continue
        assert isinstance(route, Route)
        path = PARAMETER.sub("{}", route.path)
        if path.startswith("/console/"):  # the console's files: one row
            path = "/console/..."
        found |= {(method, path) for method in route.methods or () if method != "HEAD"}
    return found


def test_the_endpoint_table_lists_every_route_and_no_other() -> None:
    """A route added to the app, or removed from it, must be added to or removed from the page."""
    assert documented() == routed()


def test_every_documented_endpoint_has_a_curl_example() -> None:
    """Each row of the table has a ``curl`` command with its method and path."""
    commands = endpoints_section().replace("\\\n", " ").splitlines()
    curls = [line for line in commands if line.startswith("curl ")]
    for method, path in documented():
        pattern = re.escape(path).replace(r"\{\}", "[A-Za-z_]+").replace(r"\.\.\.", ".+")
        url = re.compile(rf"\$URL{pattern}(?:[\s?'\"]|$)")
        matching = [line for line in curls if url.search(line)]
        if method == "DELETE":
            matching = [line for line in matching if "-X DELETE" in line]
        elif method == "POST":
            matching = [line for line in matching if " -d " in line or "-X POST" in line]
        else:
            matching = [line for line in matching if "-X " not in line and " -d " not in line]
        assert matching, f"no curl example for {method} {path}"
