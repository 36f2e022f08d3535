"""bench/serve.py: it serves, streams and reports every figure (no timing checks).

Pydantic AI is never installed with fncore, so the smoke run leaves it out (``--no-peers``),
and a run that asks for it where it is missing stops with one line saying where to get it.
"""

from __future__ import annotations

import subprocess
import sys

from bench_runs import BENCH, check_figures, quick_run


def test_quick_run_reports_every_figure() -> None:
    """--quick --json --no-peers: every figure a number, and all 500 streams their own."""
    figures, table = quick_run("serve.py", "--no-peers")
    check_figures(
        figures,
        measured=(
            "chat_wall_us",
            "plain_wall_us",
            "streams_p50_ms",
            "streams_p99_ms",
            "streams_peak_rss_mb",
            "fncore_agui_rps",
            "fncore_chat_stream_rps",
        ),
        derived=(
            "serve_overhead_ratio",
            "serve_wall_ratio",
            "chat_cpu_us",
            "plain_cpu_us",
            "fncore_agui_cpu_us",
            "fncore_chat_stream_cpu_us",
        ),
    )
    assert figures["streams_500_ok"] is True
    assert figures["streams_completed"] == 500
    assert "pydantic_ai_agui_rps" not in figures
    assert "fncore_vs_pydantic_ai_rps" not in figures
    assert "serve_overhead_ratio" in table


def test_a_missing_peer_is_named_in_one_line() -> None:
    """Without pydantic-ai-slim under --peers-python, exit status 2 and one line on stderr."""
    done = subprocess.run(
        [sys.executable, str(BENCH / "serve.py"), "--quick", "--peers-python", sys.executable],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("serve.py: ")
    assert "pydantic-ai-slim" in line
    assert "docs/performance.md" in line
