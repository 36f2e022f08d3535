"""Serve an agent over HTTP: `create_app` makes an ASGI app with OpenAI's API and AG-UI.

Needs the ``serve`` extra: ``pip install "fncore-agents[serve]"`` (Starlette, uvicorn,
sse-starlette and ag-ui-protocol).
"""

from fncore import _public
from fncore.serve._app import create_app as create_app
from fncore.serve._runs import RunsLog as RunsLog
from fncore.serve._settings import ServeSettings as ServeSettings

_public.export(__name__)
