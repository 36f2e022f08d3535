"""``fncore run`` with ``retry`` configured: each retry is one readable line on stderr."""

from __future__ import annotations

from pathlib import Path

from fake_provider import free_port
from support import run_fncore

RETRY = '[[middleware]]\nuse = "retry"\nwait_initial = 0.01\nwait_max = 0.02\nwait_jitter = 0\n'


def test_each_retry_is_one_readable_line_and_stamina_says_nothing(tmp_path: Path) -> None:
    """A model nobody answers for: two retries, each one `[retry]` line; no stamina record.

    In a subprocess, as a user runs it: Python's last-resort handler (which printed
    stamina's bare ``stamina.retry_scheduled``) is only used when no handler took a record.
    """
    config = tmp_path / "retry.toml"
    config.write_text(RETRY, encoding="utf-8")
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = run_fncore(
        tmp_path,
        *("run", "--config", str(config), "--provider", "openai", "--model", "m"),
        *("--base-url", url, "hi"),
        environ={"OPENAI_API_KEY": "unused"},
    )
    assert done.returncode == 1, done.stderr
    assert "stamina" not in done.stderr
    retries = [line for line in done.stderr.splitlines() if line.startswith("[retry] ")]
    assert len(retries) == 2, done.stderr
    for attempt, (line, wait) in enumerate(zip(retries, ("0.01", "0.02"), strict=True), 1):
        assert line.startswith(
            f"[retry] model call to m: attempt {attempt} of 3 failed (ConnectionFailed: could "
            f"not reach openai at {url}/"
        ), line
        assert line.endswith(f"); attempt {attempt + 1} in {wait} s"), line
