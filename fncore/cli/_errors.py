"""What a command raises to fail with exit status 1 and one line on stderr."""

from __future__ import annotations


class CommandFailed(Exception):
    """The command could not do its job; the message (one line) says why and what to do."""
