"""The ``fncore`` command line: run your agent or the example, show its stack, keep sessions.

Usage::

    fncore run "What is 2 + 3?"       # answer on stdout, middleware trace on stderr
    fncore run --stream "What is 2 + 3?"
    fncore run --trace "What is 2 + 3?"     # the run's OpenTelemetry spans on stderr too
    fncore stack                      # the onion, position by position
    fncore run --agent myapp:agent "hi"     # your agent (an Agent, or a function making one)
    fncore run --session ada "hi"     # continue the session 'ada' (kept in sessions.db)
    fncore sessions list              # or: sessions show NAME, sessions delete NAME
    fncore --config fncore.toml --provider test --model demo run "hi"
"""

from fncore.cli._app import main

__all__ = ["main"]
