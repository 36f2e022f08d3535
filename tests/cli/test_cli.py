"""The ``fncore`` command line: in-process through ``main`` and as a real subprocess."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from returns.result import Failure

from fncore import (
    Agent,
    Outcome,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    Terminate,
    default_registry,
    load_container,
)
from fncore.cli import main
from fncore.cli._commands import example_agent, stream_prompt
from fncore.cli._example import INSTRUCTION, build_example_agent
from fncore.middleware import ORDER
from fncore.testing import TestModel

PROMPT = "What is 2 + 3?"
ANSWER = "add: 5; multiply: 6; word_count: 5"
TRACE = [
    "[run] start: 1 message, tool_choice auto",
    f"[system_prompt] round 1: + {INSTRUCTION!r}",
    "[model_call] round 1: test model, 1 message, 3 tools -> 3 tool calls",
    '[tool_call] add({"a":2,"b":3}) -> 5',
    '[tool_call] multiply({"a":2,"b":3}) -> 6',
    '[tool_call] word_count({"text":"What is 2 + 3?"}) -> 5',
    f"[system_prompt] round 2: + {INSTRUCTION!r}",
    "[model_call] round 2: test model, 3 messages, 3 tools -> text (34 chars)",
]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the runner's own FNCORE_* variables out of every test."""
    for key in list(os.environ):
        if key.startswith("FNCORE_"):
            monkeypatch.delenv(key)


def _clean_environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("FNCORE_")}


def _fncore_command() -> list[str]:
    script = Path(sys.executable).parent / "fncore"
    return [str(script)] if script.exists() else [sys.executable, "-m", "fncore.cli"]


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fncore: error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_run_prints_answer_on_stdout_and_trace_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`fncore run` prints only the answer on stdout and each middleware's view on stderr."""
    assert main(["run", PROMPT]) == 0
    out, err = capsys.readouterr()
    assert out == ANSWER + "\n"
    lines = err.splitlines()
    assert lines[: len(TRACE)] == TRACE
    assert lines[-1].startswith("[run] done: 2 rounds, ")
    assert lines[-1].endswith("stop: completed")


def test_stream_prints_same_answer_and_trace(capsys: pytest.CaptureFixture[str]) -> None:
    """`--stream` writes the same stdout text and the same trace as a plain run."""
    assert main(["run", PROMPT]) == 0
    plain = capsys.readouterr()
    assert main(["run", "--stream", PROMPT]) == 0
    streamed = capsys.readouterr()
    assert streamed.out == plain.out == ANSWER + "\n"
    assert streamed.err == plain.err


def test_model_flag_and_shared_options_before_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--provider`/`--model` work before or after the command and reach the model."""
    assert main(["--model", "early", "run", "--provider", "test", PROMPT]) == 0
    out, err = capsys.readouterr()
    assert out == ANSWER + "\n"
    assert "[model_call] round 1: early model," in err
    assert main(["--model", "early", "run", "--model", "late", PROMPT]) == 0
    assert "[model_call] round 1: late model," in capsys.readouterr().err


def test_environment_applies_and_flags_win(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FNCORE_* variables configure the run, and command-line flags override them."""
    monkeypatch.setenv("FNCORE_MODEL__NAME", "from-env")
    assert main(["run", PROMPT]) == 0
    assert "from-env model" in capsys.readouterr().err
    assert main(["run", "--model", "from-flag", PROMPT]) == 0
    assert "from-flag model" in capsys.readouterr().err


def test_config_file_is_used(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`--config` reads TOML and YAML files (here, the model name)."""
    toml = tmp_path / "fncore.toml"
    toml.write_text('[model]\nkind = "test"\nname = "toml-model"\n', encoding="utf-8")
    yaml = tmp_path / "fncore.yaml"
    yaml.write_text("model:\n  name: yaml-model\n", encoding="utf-8")
    assert main(["run", "--config", str(toml), PROMPT]) == 0
    assert "toml-model model" in capsys.readouterr().err
    assert main(["run", "--config", str(yaml), PROMPT]) == 0
    assert "yaml-model model" in capsys.readouterr().err


def test_stack_lists_positions_and_middleware(capsys: pytest.CaptureFixture[str]) -> None:
    """`fncore stack` prints the example's onion: every position, middleware and tool."""
    assert main(["stack"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["run", "log_run", "->", "(agent", "loop)"]
    for position in ("run", "reasoning", "model_call", "tool_call", "compress_context"):
        assert any(line.startswith(position) for line in lines), position
    assert "trace_model_call -> (model)" in out
    assert "trace_tool_call -> (tool)" in out
    assert "system_prompt    (agent instructions) -> add_instruction\n" in out
    assert lines[-1].split() == ["tools", "add,", "multiply,", "word_count"]


def test_stack_tells_the_agents_instructions_from_the_built_in(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The agent's own instructions are `(agent instructions)`; the built-in is `instructions`."""
    config = tmp_path / "fncore.toml"
    config.write_text('[[middleware]]\nuse = "instructions"\ntemplate = "Hi."\n', encoding="utf-8")
    assert main(["stack", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "system_prompt    (agent instructions) -> add_instruction -> instructions\n" in out


def test_stack_honours_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`fncore stack --config` loads the file, so a bad one fails there too."""
    good = tmp_path / "ok.toml"
    good.write_text("[loop]\nmax_iterations = 3\n", encoding="utf-8")
    assert main(["stack", "--config", str(good)]) == 0
    assert "log_run" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text('[model]\nkind = "nope"\n', encoding="utf-8")
    assert main(["stack", "--config", str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "unknown kind 'nope'" in _one_error_line(err)


@pytest.mark.parametrize(
    "argv",
    [["--bogus"], ["run", "--bogus", PROMPT], ["run"], [], ["stack", "extra"], ["fly"]],
)
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad command line exits 2 with a single `fncore: error:` line and no usage dump."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    _one_error_line(err)


def test_unknown_provider_lists_valid_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    """`--provider nope` exits 1 with one line naming the valid kinds."""
    assert main(["run", "--provider", "nope", PROMPT]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    line = _one_error_line(err)
    assert "'nope'" in line
    assert "use one of: anthropic, openai, openai-responses, test" in line


def test_missing_config_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A missing `--config` file exits 1 with one line naming the file."""
    missing = tmp_path / "absent.toml"
    assert main(["run", "--config", str(missing), PROMPT]) == 1
    assert str(missing) in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    ("name", "text"),
    [("bad.toml", "[model\nkind = 1\n"), ("bad.yaml", "model: [\n  - a\n b: {\n")],
)
def test_invalid_config_file(
    name: str, text: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An unparsable TOML or YAML file exits 1 with one line."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert main(["run", "--config", str(path), PROMPT]) == 1
    assert "is not valid" in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('[agent]\ninstructions = "caf\xe9"\n'.encode("latin-1"), "not UTF-8"),
        (b"[loop]\nmax_iterations = 'many'\n", "'loop.max_iterations' from "),
        (b"[plugins]\nallow = ['missing']\n", "plugin 'missing' is allowed"),
    ],
)
def test_each_malformed_config_file_is_one_line_naming_it(
    content: bytes, words: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Not UTF-8, a wrong type, a missing plugin: exit 1, one line, the file or key named."""
    path = tmp_path / "fncore.toml"
    path.write_bytes(content)
    assert main(["run", "--config", str(path), PROMPT]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert words in line


@pytest.mark.parametrize(
    ("environ", "words"),
    [
        ({"FNCORE_LOOP__MAX_ITERATIONS": "many"}, "FNCORE_LOOP__MAX_ITERATIONS"),
        ({"FNCORE_MODEL": "x", "FNCORE_MODEL__KIND": "test"}, "FNCORE_MODEL"),
        ({"FNCORE_LOPO__MAX_ITERATIONS": "3"}, "FNCORE_LOPO__MAX_ITERATIONS"),
    ],
)
def test_each_malformed_variable_is_one_line_naming_it(
    environ: dict[str, str],
    words: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bad, conflicting or unknown FNCORE_* variable: exit 1, one line naming it."""
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert main(["run", PROMPT]) == 1
    assert words in _one_error_line(capsys.readouterr().err)


async def test_environment_text_arrives_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """FNCORE_AGENT__INSTRUCTIONS with a '#' or ': ' reaches the model exactly as written."""
    monkeypatch.setenv("FNCORE_AGENT__INSTRUCTIONS", "English #1 priority: be brief")
    _, agent = example_agent(None, {}, trace=lambda line: None)
    await agent.run(PROMPT)
    model = agent.model
    assert isinstance(model, TestModel)
    assert model.requests[0].instructions == f"English #1 priority: be brief\n{INSTRUCTION}"


def test_wrong_config_key(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A misspelt configuration key exits 1 with one line naming the key."""
    path = tmp_path / "typo.yaml"
    path.write_text("model:\n  nmae: x\n", encoding="utf-8")
    assert main(["stack", "--config", str(path)]) == 1
    assert "model.nmae" in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("stream", [False, True])
def test_failed_run_exits_1_with_the_error(
    stream: bool, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A run returning Failure prints `fncore: error: <error>` and exits 1, stdout empty."""
    path = tmp_path / "short.toml"
    path.write_text("[loop]\nmax_iterations = 1\n", encoding="utf-8")
    argv = ["run", "--config", str(path), PROMPT]
    assert main(argv[:1] + ["--stream"] * stream + argv[1:]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[-2].startswith("[run] stopped: error: ")
    assert lines[-1].startswith("fncore: error: ")
    assert "max_iterations" in lines[-1]


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` and `--version` print to stdout and exit 0."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: fncore" in out
    assert "run" in out
    assert "stack" in out
    assert main(["run", "--help"]) == 0
    assert "--stream" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("fncore ")


def test_example_agent_uses_its_own_registry() -> None:
    """Building the example twice registers nothing in the default registry."""
    before = default_registry.middleware
    lines: list[str] = []
    first = build_example_agent(load_container(environ={}), lines.append)
    second = build_example_agent(load_container(environ={}), lines.append)
    assert default_registry.middleware == before
    assert first.describe() == second.describe()
    assert lines == []


async def test_instruction_is_appended_to_configured_instructions() -> None:
    """The system_prompt transformer appends its fixed line to `agent.instructions`."""
    container = load_container(overrides={"agent": {"instructions": "Be brief."}}, environ={})
    lines: list[str] = []
    agent = build_example_agent(container, lines.append)
    assert (await agent.run(PROMPT)).unwrap().output == ANSWER
    model = agent.model
    assert isinstance(model, TestModel)
    assert model.requests[0].instructions == f"Be brief.\n{INSTRUCTION}"
    assert lines[: len(TRACE)] == TRACE


async def test_stream_prints_output_when_no_text_streamed() -> None:
    """A streamed run that ends without text deltas (terminated) still prints its output."""
    registry = Registry()

    @registry.on("run")
    async def stop(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        return Failure(Terminate("stopped early"))

    out = io.StringIO()
    await stream_prompt(Agent(TestModel(), registry=registry), PROMPT, out)
    assert out.getvalue() == "stopped early\n"


def test_subprocess_run_and_stream() -> None:
    """The installed `fncore` script answers on stdout and traces on stderr, streaming too."""
    env = _clean_environ()
    for extra in ([], ["--stream"]):
        done = subprocess.run(
            [*_fncore_command(), "run", *extra, PROMPT],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == ANSWER + "\n"
        assert done.stderr.splitlines()[: len(TRACE)] == TRACE


def test_subprocess_module_errors_are_one_line() -> None:
    """`python -m fncore.cli` with a bad provider exits 1 with one stderr line, no traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "fncore.cli", "run", "--provider", "nope", PROMPT],
        capture_output=True,
        text=True,
        env=_clean_environ(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert "use one of: anthropic, openai, openai-responses, test" in _one_error_line(done.stderr)


PRODUCTION = Path(__file__).resolve().parents[2] / "examples" / "production.toml"


@pytest.mark.parametrize("stream", [False, True])
def test_the_production_example_runs_offline(
    capsys: pytest.CaptureFixture[str], stream: bool
) -> None:
    """examples/production.toml answers the README's prompt on the test model, streaming or not."""
    argv = ["run", "--config", str(PRODUCTION), *(["--stream"] if stream else []), PROMPT]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.strip() == ANSWER
    assert err.splitlines()[-1].endswith("stop: completed")


def test_stack_shows_the_production_built_ins_in_their_places(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`fncore stack` lists every configured built-in where it declared its place."""
    assert main(["stack", "--config", str(PRODUCTION)]) == 0
    lines = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()}
    calls = [name for name in lines["model_call"] if name != "->"]
    in_order = [name for name in ORDER if name in calls]
    assert calls == ["trace_model_call", *in_order, "trace_chat", "(model)"]
    assert len(in_order) == 8
    tools = [name for name in lines["tool_call"] if name != "->"]
    assert tools == ["trace_tool_call", "trace", "limit_calls", "retry_tools", "timeout", "(tool)"]
    assert [name for name in lines["run"] if name != "->"] == [
        "log_run",
        "trace",
        "timeout",
        "(agent",
        "loop)",
    ]
