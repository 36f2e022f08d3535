"""The web console: static files shipped in the package, served at ``/`` and ``/console/``.

Routes::

    GET /                    the console's page (``console/index.html``)
    GET /console/views.json  the views: every module in ``console/views/``
    GET /console/...         its scripts and styles

No build step: the page loads plain JavaScript modules, one per view. A view is a file
``console/views/NAME.js`` exporting ``title``, ``order`` (its tab's place) and
``mount(element, api)``: dropping the file there adds its tab. The views call the
JSON endpoints (``/api/runs``, ``/api/stack``, ``/api/tools``), with the key the user
gave at the login prompt when the server asks for one.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

__all__ = ["CONSOLE_DIR", "console_routes"]

CONSOLE_DIR = Path(__file__).parent / "console"
"""Where the console's files are."""


async def _page(request: Request) -> Response:
    return FileResponse(CONSOLE_DIR / "index.html", headers={"cache-control": "no-cache"})


async def _views(request: Request) -> Response:
    names = sorted(path.stem for path in (CONSOLE_DIR / "views").glob("*.js"))
    return JSONResponse({"views": names}, headers={"cache-control": "no-cache"})


def console_routes() -> list[BaseRoute]:
    """The routes of the console's page and its static files."""
    return [
        Route("/", _page, methods=["GET"]),
        Route("/console/views.json", _views, methods=["GET"]),
        Mount("/console", StaticFiles(directory=CONSOLE_DIR), name="console"),
    ]
