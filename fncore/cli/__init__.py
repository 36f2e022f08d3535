"""The ``fncore`` command line: run the example agent, or show its middleware stack.

Usage::

    fncore run "What is 2 + 3?"       # answer on stdout, middleware trace on stderr
    fncore run --stream "What is 2 + 3?"
    fncore stack                      # the onion, position by position
    fncore --config fncore.toml --provider test --model demo run "hi"
"""

from fncore.cli._app import main

__all__ = ["main"]
