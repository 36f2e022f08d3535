"""Where durable runs live, who this worker is, and which stack it runs: from `DurableSettings`.

* the URL: ``[durable] url``, else ``durable.sqlite`` beside ``sessions.db`` in fncore's
  data directory;
* the executor id: given, else ``[durable] executor_id``, else made once (host name and a
  random part) and kept in ``worker-id`` in the data directory, so a restarted worker on
  the same machine recovers its own runs;
* the application version: ``fncore-`` and a hash of the served agents' names and config
  hashes, so DBOS itself recovers and dequeues only runs of this very stack.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Mapping
from urllib.parse import quote

from fncore._session_url import data_directory, parse_session_url
from fncore.settings import DurableSettings

__all__ = ["APP_NAME", "WORKFLOW", "app_version", "durable_url", "executor_id"]

APP_NAME = "fncore"
"""DBOS's application name: it namespaces queues and versions inside one database."""

WORKFLOW = "fncore.run"
"""The name of fncore's one DBOS workflow (every durable run, new or resumed)."""

DEFAULT_FILE = "durable.sqlite"
"""The default database's file name, in fncore's data directory."""

WORKER_ID_FILE = "worker-id"
"""Where the default executor id is kept, in fncore's data directory."""


def durable_url(settings: DurableSettings, environ: Mapping[str, str]) -> str:
    """The database URL, as DBOS takes it (a SQLite file's folder is made if missing).

    Example:
        >>> durable_url(DurableSettings(), {"FNCORE_HOME": "/tmp/fncore-doc"})
        'sqlite:////tmp/fncore-doc/durable.sqlite'
    """
    if settings.url is None:
        path = (data_directory(environ) / DEFAULT_FILE).absolute()
        url = f"sqlite:///{quote(path.as_posix())}"
    else:
        url = settings.url.get_secret_value()
    parsed = parse_session_url(url)
    if parsed.kind == "sqlite" and parsed.path is not None:
        parsed.path.parent.mkdir(parents=True, exist_ok=True)
        return url.split("?", 1)[0]
    if url.startswith("postgres://"):
        return "postgresql://" + url.removeprefix("postgres://")
    return url


def executor_id(settings: DurableSettings, environ: Mapping[str, str]) -> str:
    """This worker's identity: ``[durable] executor_id``, else the one kept in the data dir.

    Example:
        >>> executor_id(DurableSettings(executor_id="w1"), {})
        'w1'
    """
    if settings.executor_id:
        return settings.executor_id
    path = data_directory(environ) / WORKER_ID_FILE
    try:
        kept = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        kept = ""
    if kept:
        return kept
    made = f"{socket.gethostname()}-{os.urandom(4).hex()}"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{WORKER_ID_FILE}.{os.getpid()}")
    partial.write_text(made + "\n", encoding="utf-8")
    try:
        os.link(partial, path)  # the first worker to write it wins; the others read it
    except FileExistsError:
        made = path.read_text(encoding="utf-8").strip() or made
    finally:
        partial.unlink()
    return made


def app_version(configs: Mapping[str, str]) -> str:
    """The application version of a process serving these agents (name -> config hash).

    Example:
        >>> app_version({"a": "1f"}) == app_version({"a": "1f"}) != app_version({"a": "2e"})
        True
    """
    text = "\n".join(f"{name}={config}" for name, config in sorted(configs.items()))
    return "fncore-" + hashlib.sha256(text.encode()).hexdigest()[:16]
