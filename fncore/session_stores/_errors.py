"""What a session store raises when it cannot do its job; nothing stored is changed.

A run turns any of these into a `SessionError` value naming the exception; the command line
prints it on one line. The tree is drawn in `fncore.errors`, which exports them. A malformed
URL is a `ConfigError`, raised before any store exists.
"""

from __future__ import annotations


class SessionStoreError(Exception):
    """The session store cannot do what was asked; the message says what to fix."""


class SessionStoreUnavailable(SessionStoreError):
    """The store cannot be opened or reached (a path, a permission, a server, credentials)."""


class NotASessionStore(SessionStoreError):
    """The file or database is not a session store: another kind of file, or another app's."""


class SessionStoreCorrupt(SessionStoreError):
    """The store holds data that cannot be read back; restore it from a backup."""


class SessionSchemaTooNew(SessionStoreError):
    """The store was written by a newer fncore (a higher schema version); upgrade fncore."""

    def __init__(self, message: str, *, found: int, known: int) -> None:
        super().__init__(message)
        self.found = found
        """The schema version recorded in the store."""
        self.known = known
        """The newest schema version this fncore knows."""


def written_by_newer(what: str, found: int, known: int) -> SessionSchemaTooNew:
    """The error for ``what`` (a store, a record) at version ``found`` above ``known``."""
    msg = (
        f"{what} has version {found}, and this fncore reads up to {known}: a newer fncore "
        "wrote it; upgrade fncore to use it (nothing was changed)"
    )
    return SessionSchemaTooNew(msg, found=found, known=known)


class NotSerializable(SessionStoreError, TypeError):
    """A value in the session's state (or a message) cannot be stored; nothing was written.

    Session state holds ``None``, booleans, numbers, strings, bytes, lists, tuples, sets,
    dicts, and registered dataclasses (`register_state_type`) whose fields hold such values.
    """
