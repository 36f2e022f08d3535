"""The name fncore is installed under, which is not its import name.

The package index already holds an unrelated project called ``fncore``, so this project is
distributed as ``fncore-agents`` and imported as ``fncore``. Every install hint and version
lookup reads the name from here.
"""

from __future__ import annotations

import importlib.metadata

DISTRIBUTION = "fncore-agents"
"""The distribution name: what ``pip install`` takes."""


def install_hint(extra: str) -> str:
    """The command that installs fncore with one of its extras.

    >>> install_hint("redis")
    "pip install 'fncore-agents[redis]'"
    """
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def installed_version() -> str:
    """The installed version of fncore, or ``"unknown"`` when it runs from a bare checkout."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - always installed in tests
        return "unknown"
