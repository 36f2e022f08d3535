"""A program that answers every line on stdin with text that is not JSON-RPC."""

import sys

for _line in sys.stdin:
    print("hello, I do not speak MCP", flush=True)
