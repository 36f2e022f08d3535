"""The command line's logging: fncore's records as trace lines on stderr, stamina's kept out.

The CLI is an application, so it decides where log records go, for the time a command
runs (then everything is put back, so calling `main` in a process changes nothing):

* records of the ``fncore`` loggers (``fncore.retry``'s line for each retry scheduled, a
  hook that timed out, ...) are printed to stderr like the trace, ``[retry] ...``, their
  control characters escaped;
* stamina's own record of a retry (``stamina.retry_scheduled``, whose details are in
  structured extras a plain handler does not print) is dropped: fncore's line says the
  same, readably. Without this, Python's last-resort handler prints its bare message.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from fncore.cli._commands import to_stderr

STAMINA = "stamina"
"""The logger stamina writes its retry records to."""


class TraceLines(logging.Handler):
    """Prints each record as one trace line on stderr: ``[retry] message``."""

    def emit(self, record: logging.LogRecord) -> None:
        """Print ``record`` (its logger's name after ``fncore.``, then its message)."""
        try:
            name = record.name.removeprefix("fncore.")
            to_stderr(f"[{name}] {record.getMessage()}")
        except Exception:
            self.handleError(record)


@contextmanager
def cli_logging() -> Iterator[None]:
    """Route the loggers as the module says while the block runs; restore them after."""
    fncore = logging.getLogger("fncore")
    stamina = logging.getLogger(STAMINA)
    lines, silent = TraceLines(), logging.NullHandler()
    propagated = stamina.propagate
    fncore.addHandler(lines)
    stamina.addHandler(silent)
    stamina.propagate = False
    try:
        yield
    finally:
        stamina.propagate = propagated
        stamina.removeHandler(silent)
        fncore.removeHandler(lines)
