"""bench/peers.py without a peer installed: one line naming it, and a failing exit status.

The peers are never installed with fncore, so this runs the script with one of them hidden
(a ``None`` in ``sys.modules`` makes it unimportable), whether or not a venv has it.
"""

from __future__ import annotations

from bench_runs import run_code

HIDING = """
import runpy, sys
sys.modules["langchain"] = None
sys.path.insert(0, sys.argv[1])
sys.argv = [sys.argv[1] + "/peers.py", "--quick"]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_a_missing_peer_is_named_in_one_line() -> None:
    """Without langchain, peers.py stops at once: exit status 2, one line on stderr."""
    done = run_code(HIDING)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("peers.py: not installed: ")
    assert "langchain" in line
    assert "docs/performance.md" in line
