"""Anthropic Messages adapter for fncore; built in the adapters issue."""
