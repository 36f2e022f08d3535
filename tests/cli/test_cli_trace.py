"""``fncore run --trace``: the run's OpenTelemetry spans on stderr, as a compact tree."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from test_cli import ANSWER, PROMPT, _clean_env, _clean_environ, _fncore_command  # noqa: F401

from fncore.cli import main
from fncore.cli._spans import PREFIX, SpanPrinter, details

MS = r"\d+\.\d\d ms"
TREE = [
    rf"\[span\] invoke_agent agent {MS}: provider fncore\.testing, model test, rounds 2, "
    r"stop completed, tokens \d+ in / \d+ out",
    rf"\[span\]   chat test {MS}: attempt 1, finish tool_calls(, first chunk {MS})?, "
    r"tokens \d+ in / \d+ out",
    rf"\[span\]   execute_tool add {MS}: call call_0_0",
    rf"\[span\]   execute_tool multiply {MS}: call call_0_1",
    rf"\[span\]   execute_tool word_count {MS}: call call_0_2",
    rf"\[span\]   chat test {MS}: attempt 1, finish stop(, first chunk {MS})?, "
    r"tokens \d+ in / \d+ out",
]
"""The span lines of the example's run, in order."""


def span_lines(err: str) -> list[str]:
    """The ``[span]`` lines of stderr."""
    return [line for line in err.splitlines() if line.startswith(PREFIX)]


def matches_tree(lines: list[str]) -> bool:
    """Whether ``lines`` are the example run's spans, in tree order."""
    return len(lines) == len(TREE) and all(
        re.fullmatch(pattern, line) for pattern, line in zip(TREE, lines, strict=True)
    )


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_trace_prints_the_runs_spans_after_the_middleware_trace(
    stream: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """The answer on stdout; on stderr the usual trace, then the span tree."""
    assert main(["run", "--trace", *["--stream"] * stream, PROMPT]) == 0
    out, err = capsys.readouterr()
    assert out == ANSWER + "\n"
    lines = span_lines(err)
    assert matches_tree(lines), lines
    assert err.splitlines()[-len(TREE) :] == lines  # printed when the run's span ends
    assert ("first chunk" in lines[1]) is stream


def test_without_the_flag_no_span_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    """Plain `fncore run` prints no span lines."""
    assert main(["run", PROMPT]) == 0
    assert span_lines(capsys.readouterr().err) == []


def test_trace_beside_a_configured_trace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With `use = "trace"` in the configuration, --trace adds its own as cli_trace."""
    path = tmp_path / "traced.toml"
    path.write_text('[[middleware]]\nuse = "trace"\n', encoding="utf-8")
    assert main(["run", "--trace", "--config", str(path), PROMPT]) == 0
    assert matches_tree(span_lines(capsys.readouterr().err))
    assert main(["stack", "--config", str(path)]) == 0
    stack = capsys.readouterr().out
    assert re.search(r"model_call\s+trace_model_call -> trace -> trace_chat -> \(model\)", stack)


def test_a_failed_run_shows_its_error_on_the_span(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The run span says which error stopped it; the command still exits 1 with it."""
    path = tmp_path / "short.toml"
    path.write_text("[loop]\nmax_iterations = 1\n", encoding="utf-8")
    assert main(["run", "--trace", "--config", str(path), PROMPT]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert re.fullmatch(
        rf"\[span\] invoke_agent agent {MS}: error MaxIterationsReached, .*", lines[-6]
    ), lines
    assert lines[-1].startswith("fncore: error: ")


def test_without_the_sdk_the_error_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No OpenTelemetry SDK: one line naming the extra to install, exit 1."""
    monkeypatch.delitem(sys.modules, "fncore.cli._spans")
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    assert main(["run", "--trace", PROMPT]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "fncore: error: --trace needs the OpenTelemetry SDK: pip install 'fncore-agents[otel]'\n"
    )


def test_another_missing_module_is_not_mistaken_for_the_sdk(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import error of something else is reported as itself."""
    monkeypatch.setitem(sys.modules, "fncore.cli._spans", None)
    assert main(["run", "--trace", PROMPT]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fncore: error: ModuleNotFoundError: ")
    assert "fncore.cli._spans" in err


def test_help_mentions_trace(capsys: pytest.CaptureFixture[str]) -> None:
    """`fncore run --help` lists --trace and the extra it needs."""
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--trace" in out
    assert "fncore-agents[otel]" in out


def test_spans_whose_root_never_ended_are_printed_at_shutdown() -> None:
    """A trace cut short still shows what ended, each orphan as a root."""
    lines: list[str] = []
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SpanPrinter(lines.append))
    tracer = provider.get_tracer("test")
    with (
        tracer.start_as_current_span("never ends", end_on_exit=False),
        tracer.start_as_current_span("child"),
    ):
        pass
    assert lines == []
    provider.shutdown()
    assert len(lines) == 1
    assert re.fullmatch(rf"\[span\] child {MS}", lines[0])


def test_subprocess_run_with_trace() -> None:
    """The installed `fncore` script prints the span tree on stderr."""
    done = subprocess.run(
        [*_fncore_command(), "run", "--trace", PROMPT],
        capture_output=True,
        text=True,
        env=_clean_environ(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"
    assert matches_tree(span_lines(done.stderr)), done.stderr


def test_details_of_other_outcomes() -> None:
    """Terminations, cache hits and spans that are not fncore's show as they are."""
    hit = ReadableSpan(
        "chat test",
        attributes={"gen_ai.operation.name": "chat", "fncore.attempt": 0, "fncore.cache.hit": True},
    )
    assert details(hit) == ["cache hit", "attempt 0"]
    stopped = ReadableSpan(
        "invoke_agent agent",
        attributes={"gen_ai.operation.name": "invoke_agent", "fncore.terminated": True},
    )
    assert details(stopped) == ["terminated"]
    assert details(ReadableSpan("my own span")) == []


def test_a_span_without_context_is_printed_alone() -> None:
    """A span the SDK made without a context (none does) is still one root line."""
    lines: list[str] = []
    printer = SpanPrinter(lines.append)
    printer.on_end(ReadableSpan("bare", start_time=0, end_time=0))
    assert lines == ["[span] bare 0.00 ms"]
    assert printer.force_flush()
