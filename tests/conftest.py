"""Shared test configuration."""

# Checked by mypy in CI (tests/typing/check_expected_errors.py), not run by pytest:
# expected_errors.py registers wrongly typed middleware on purpose.
collect_ignore = ["typing"]
