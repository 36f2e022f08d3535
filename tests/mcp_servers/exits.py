"""A program that exits at once with an explanation on stderr: not a working MCP server."""

import sys

print("demo server: TOKEN is not set", file=sys.stderr)
sys.exit(2)
