"""Session-store URLs: what ``[sessions] url`` may say, checked without opening anything.

Three forms:

* ``memory://``: in this process (`InMemorySessionStore`); nothing survives a restart;
* ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db`` (SQLAlchemy's
  convention: the path follows the third slash, so an absolute path makes four);
  ``?synchronous=normal`` trades durability across a power loss for speed (the default,
  ``full``, waits for the disk on every commit);
* ``postgresql://user:password@host:port/database`` (``postgres://`` too), with any
  libpq parameters in the query (``?sslmode=require``).

The default, where `load_container` finds no URL set, is ``sessions.db`` in fncore's data
directory: ``$FNCORE_HOME`` when set, else the user's data directory as platformdirs finds
it (``~/.local/share/fncore`` on Linux, honouring ``XDG_DATA_HOME``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, final
from urllib.parse import parse_qs, quote, unquote, urlsplit

import platformdirs

StoreKind = Literal["memory", "sqlite", "postgresql"]
"""The kinds of session store a URL can name."""

FORMS = "memory://, sqlite:///path/to/sessions.db or postgresql://user@host:port/database"
"""The URL forms, for messages."""

DEFAULT_FILE = "sessions.db"
"""The file name of the default SQLite store, in fncore's data directory."""


@final
@dataclass(frozen=True, slots=True)
class SessionUrl:
    """A session-store URL, parsed.

    Example:
        >>> parse_session_url("sqlite:////var/lib/app/sessions.db").path
        PosixPath('/var/lib/app/sessions.db')
    """

    kind: StoreKind
    """Which store."""
    url: str
    """The URL as written."""
    path: Path | None = None
    """The database file (``sqlite`` only)."""
    synchronous: Literal["full", "normal"] = "full"
    """SQLite's ``synchronous`` setting (``sqlite`` only)."""


_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*:(?P<password>[^?#]*)@")
"""A password in a URL that `urlsplit` cannot read: up to the last ``@`` before the query
(it may hold an unencoded ``/``, or the host may be malformed)."""

_QUOTED = re.compile(r"(['\"])(.*?)\1")

REDACTED = "[redacted]"
"""What a password is shown as."""


def _password(url: str) -> str | None:
    """The password in ``url`` as written (not decoded), or ``None``."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    if not password:
        found = _USERINFO.match(url)
        password = found["password"] if found is not None else None
    return password or None


def redact_password(url: str) -> str:
    """``url`` with its password, if any, replaced by ``[redacted]``.

    A URL too malformed to parse has its password found by pattern, so it is hidden too.

    Example:
        >>> redact_password("postgresql://app:hunter2@db:5432/app")
        'postgresql://app:[redacted]@db:5432/app'
        >>> redact_password("postgresql://app:hunter2@[db/app")
        'postgresql://app:[redacted]@[db/app'
    """
    password = _password(url)
    if password is None:
        return url
    return url.replace(f":{password}@", f":{REDACTED}@", 1)


def hide_password(text: str, url: str) -> str:
    """``text`` (a parser's or driver's message about ``url``) with the URL's password hidden.

    The password is hidden as written and as decoded, and so is any quoted piece of it:
    parsers quote the part of a URL they cannot read, which may be part of a password.

    Example:
        >>> hide_password('bad token: "pa%zz"', "postgresql://app:pa%zz@db/app")
        'bad token: "[redacted]"'
        >>> hide_password("not a port: 'pa'", "postgresql://app:pa/ss@db/app")
        "not a port: '[redacted]'"
    """
    password = _password(url)
    if password is None:
        return text
    forms = sorted({password, unquote(password)}, key=len, reverse=True)
    for form in forms:
        text = text.replace(form, REDACTED)

    def piece(quoted: re.Match[str]) -> str:
        inside = quoted[2]
        if inside and any(inside in form for form in forms):
            return f"{quoted[1]}{REDACTED}{quoted[1]}"
        return quoted[0]

    return _QUOTED.sub(piece, text)


def session_url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as a session-store URL, or ``None`` if nothing is.

    Example:
        >>> session_url_problem("redis://localhost")
        "'redis://localhost' has scheme 'redis'; use memory://, sqlite:///path/to/sessions.db or postgresql://user@host:port/database"
    """
    try:
        parse_session_url(url)
    except ValueError as exc:
        return str(exc)
    return None


def parse_session_url(url: str) -> SessionUrl:
    """Parse a session-store URL.

    Raises:
        ValueError: saying what is wrong and what to write instead.

    Example:
        >>> parse_session_url("memory://").kind
        'memory'
    """
    shown = redact_password(url)  # what messages show: never the password
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        msg = f"{shown!r} is not a valid URL ({hide_password(str(exc), url)}); use {FORMS}"
        raise ValueError(msg) from None
    scheme = parts.scheme.lower()
    if scheme == "memory":
        if parts.netloc or parts.path or parts.query or parts.fragment:
            msg = f"memory:// takes no host, path or options, not {shown!r}"
            raise ValueError(msg)
        return SessionUrl("memory", url)
    if scheme == "sqlite":
        if parts.netloc:
            name = shown.split("://", 1)[1]
            msg = (
                f"a sqlite URL has no host: write sqlite:///{name} (relative) or "
                "sqlite:////abs/path (absolute)"
            )
            raise ValueError(msg)
        path = unquote(parts.path[1:])
        if not path or path.endswith("/"):
            msg = f"{shown!r} names no file: write sqlite:///path/to/sessions.db"
            raise ValueError(msg)
        options = parse_qs(parts.query, keep_blank_values=True)
        unknown = sorted(set(options) - {"synchronous"})
        if unknown or parts.fragment:
            what = f"option {unknown[0]!r}" if unknown else "fragment (#...)"
            msg = f"{shown!r}: a sqlite URL takes no {what}; its one option is ?synchronous="
            raise ValueError(msg)
        synchronous = options.get("synchronous", ["full"])[-1].lower()
        if synchronous not in ("full", "normal"):
            msg = f"{shown!r}: synchronous must be full or normal, not {synchronous!r}"
            raise ValueError(msg)
        mode: Literal["full", "normal"] = "normal" if synchronous == "normal" else "full"
        return SessionUrl("sqlite", url, Path(path), mode)
    if scheme in ("postgresql", "postgres"):
        if parts.netloc.count("@") > 1:
            msg = f"{shown!r}: the user or password holds an '@'; write it as %40"
            raise ValueError(msg)
        if port == 0:
            msg = f"{shown!r}: the port must be between 1 and 65535"
            raise ValueError(msg)
        return SessionUrl("postgresql", url)
    what = f"scheme {scheme!r}" if scheme else "no scheme"
    msg = f"{shown!r} has {what}; use {FORMS}"
    raise ValueError(msg)


def data_directory(environ: Mapping[str, str]) -> Path:
    """Fncore's data directory: ``FNCORE_HOME`` if set, else the user's data directory.

    Example:
        >>> data_directory({"FNCORE_HOME": "/srv/fncore"})
        PosixPath('/srv/fncore')
    """
    home = environ.get("FNCORE_HOME")
    if home:
        return Path(home).expanduser()
    return Path(platformdirs.user_data_dir("fncore", appauthor=False))


def default_session_url(environ: Mapping[str, str]) -> str:
    """The URL of the default session store: ``sessions.db`` in `data_directory`.

    Example:
        >>> default_session_url({"FNCORE_HOME": "/srv/fncore"})
        'sqlite:////srv/fncore/sessions.db'
    """
    path = (data_directory(environ) / DEFAULT_FILE).absolute()
    return f"sqlite:///{quote(path.as_posix())}"
