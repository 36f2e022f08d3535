"""API keys: ``Authorization: Bearer KEY`` names a tenant, which each run gets as metadata.

Built on Starlette's ``AuthenticationMiddleware``: `KeyBackend` checks the key and sets
``request.user`` to the key's tenant; `run_metadata` turns it into the run's metadata. A
key is compared with every configured key in constant time (``hmac.compare_digest``, no
early exit), and never logged, echoed or kept in an error.

With keys, each tenant's sessions live in a namespace of their own in the one store: the
client's session ``NAME`` is stored as ``TENANT/NAME`` (`session_key`), and a client sees
only its own sessions, under its own names (`client_name`). A client name may not contain
the separator, so no tenant can name a session in another's namespace. Without keys, names
are stored as they are.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence

from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    SimpleUser,
)
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse

from fncore.serve._wire import RequestError, error_body

__all__ = [
    "OPEN_PATHS",
    "SESSION_SEPARATOR",
    "auth_middleware",
    "client_name",
    "run_metadata",
    "session_key",
    "tenant_of",
]

OPEN_PATHS = frozenset({"/", "/healthz", "/readyz"})
"""Paths answered without a key (with ``/console/...``, the console's static files)."""

_CONSOLE = "/console/"

_SCOPE = "tenant"
"""The credential a valid key gives."""

SESSION_SEPARATOR = "/"
"""Joins a tenant and its client's session name into the stored session id."""


def _path(conn: HTTPConnection) -> str:
    """The request's path inside this app (without the prefix it is mounted under)."""
    path: str = conn.scope["path"]
    root: str = conn.scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


def is_open(path: str) -> bool:
    """Whether ``path`` is answered without a key.

    Example:
        >>> is_open("/healthz"), is_open("/console/app.js"), is_open("/api/sessions")
        (True, True, False)
    """
    return path in OPEN_PATHS or path.startswith(_CONSOLE)


class KeyBackend(AuthenticationBackend):
    """Finds the tenant of the request's bearer key, or refuses it."""

    def __init__(self, keys: Sequence[tuple[bytes, str]]) -> None:
        self._keys = tuple(keys)

    def tenant(self, given: bytes) -> str | None:
        """The tenant whose key is ``given``: every key compared, in constant time."""
        found = None
        for key, tenant in self._keys:
            if hmac.compare_digest(key, given):
                found = tenant
        return found

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser] | None:
        """The tenant of the request's key; ``None`` on an open path without a key.

        Raises:
            AuthenticationError: for a missing or unknown key on a path that needs one.
        """
        scheme, _, given = conn.headers.get("authorization", "").partition(" ")
        tenant = None
        if scheme.lower() == "bearer" and given.strip():
            tenant = self.tenant(given.strip().encode())
        if tenant is not None:
            return AuthCredentials([_SCOPE]), SimpleUser(tenant)
        if is_open(_path(conn)):
            return None
        if scheme or given:
            msg = "Incorrect API key provided: send Authorization: Bearer KEY with a valid key"
        else:
            msg = "You didn't provide an API key: send it as Authorization: Bearer KEY"
        raise AuthenticationError(msg)


def _refused(conn: HTTPConnection, exc: Exception) -> JSONResponse:
    """401 in OpenAI's error shape, naming no key."""
    body = error_body(str(exc), "invalid_request_error", code="invalid_api_key")
    headers = {"www-authenticate": "Bearer", "x-should-retry": "false"}
    return JSONResponse(body, status_code=401, headers=headers)


def auth_middleware(keys: Sequence[tuple[bytes, str]]) -> list[Middleware]:
    """The middleware that requires one of ``keys`` (``(key, tenant)`` pairs); none if empty."""
    if not keys:
        return []
    return [Middleware(AuthenticationMiddleware, backend=KeyBackend(keys), on_error=_refused)]


def tenant_of(request: HTTPConnection) -> str | None:
    """The tenant of ``request``'s key; ``None`` without keys (or on an open path without one).

    Example:
        >>> from starlette.authentication import SimpleUser
        >>> tenant_of(Request({"type": "http", "user": SimpleUser("acme")}))
        'acme'
    """
    user = request.scope.get("user")
    return user.username if isinstance(user, SimpleUser) else None


def run_metadata(request: Request) -> dict[str, object]:
    """The metadata a run started by ``request`` gets: ``{"tenant": NAME}`` for a key's tenant.

    Without keys configured (or on an open path without a key), ``{}``.

    Example:
        >>> from starlette.authentication import SimpleUser
        >>> run_metadata(Request({"type": "http", "user": SimpleUser("acme")}))
        {'tenant': 'acme'}
        >>> run_metadata(Request({"type": "http"}))
        {}
    """
    tenant = tenant_of(request)
    return {} if tenant is None else {"tenant": tenant}


def session_key(request: HTTPConnection, name: str, field: str) -> str:
    """The stored id of the caller's session ``name`` (sent in ``field``).

    With keys, ``TENANT/NAME``: the session in the caller's tenant's namespace. Without
    keys, ``name`` itself.

    Raises:
        RequestError: 400 naming ``field``, for a name with the separator in it (with keys).

    Example:
        >>> from starlette.authentication import SimpleUser
        >>> session_key(Request({"type": "http", "user": SimpleUser("acme")}), "ada", "id")
        'acme/ada'
        >>> session_key(Request({"type": "http"}), "ada", "id")
        'ada'
    """
    tenant = tenant_of(request)
    if tenant is None:
        return name
    if SESSION_SEPARATOR in name:
        msg = f"{field}: a session name cannot contain {SESSION_SEPARATOR!r}, not {name!r}"
        raise RequestError(msg, param=field, code="invalid_session_name")
    return f"{tenant}{SESSION_SEPARATOR}{name}"


def client_name(request: HTTPConnection, stored: str | None) -> str | None:
    """The caller's name for the stored session id ``stored``: ``None`` if not the caller's.

    The inverse of `session_key`: with keys, a stored ``TENANT/NAME`` of the caller's
    tenant is ``NAME``, and any other id (another tenant's, one stored without keys) is
    not the caller's. Without keys, ``stored`` itself.

    Example:
        >>> from starlette.authentication import SimpleUser
        >>> acme = Request({"type": "http", "user": SimpleUser("acme")})
        >>> client_name(acme, "acme/ada"), client_name(acme, "globex/ada")
        ('ada', None)
    """
    tenant = tenant_of(request)
    if tenant is None or stored is None:
        return stored
    prefix = f"{tenant}{SESSION_SEPARATOR}"
    name = stored[len(prefix) :]
    if not stored.startswith(prefix) or SESSION_SEPARATOR in name:
        return None
    return name
