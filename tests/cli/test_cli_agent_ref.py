"""``--agent module:attr`` and ``[agent] ref``: the CLI runs your agent, from your directory."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from support import run_fncore

APP = '''
import types

from returns.result import Success

from fncore import Agent, Outcome, Registry, SqliteSessionStore, ToolCallContext
from fncore import ToolCallNext, ToolResult
from fncore.middleware import approve
from fncore.testing import TestModel

registry = Registry()


@registry.tool(inline=True)
def shout(text: str) -> str:
    """Say a text in capitals."""
    return text.upper()


@registry.on("tool_call", name="exclaim")
async def exclaim(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
    outcome = await call_next(ctx)
    if isinstance(outcome, Success):
        return Success(ToolResult(outcome.unwrap().content + "!"))
    return outcome


agent = Agent(TestModel(), registry=registry)
holder = types.SimpleNamespace(agent=agent)
NUMBER = 42


def make():
    return Agent(TestModel(), registry=registry)


async def amake():
    return Agent(TestModel(), registry=registry)


def boom():
    raise RuntimeError("no API key:\\n set one")


def wrong():
    return "text"


def careful():
    checked = Registry()
    checked.include(approve(tools=["shout"]))
    checked.include(registry)
    store = SqliteSessionStore(__file__.removesuffix(".py") + ".db")
    return Agent(TestModel(), registry=checked, sessions=store)
'''

PROMPT = "hello there"
ANSWER = "shout: HELLO THERE!\n"


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A directory holding ``app.py`` (agents, factories and mistakes) and broken modules."""
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "needs_missing.py").write_text("import not_installed_anywhere\n")
    (tmp_path / "raises.py").write_text("raise RuntimeError('bad import-time code')\n")
    return tmp_path


def fncore(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``fncore ARGS`` run in ``cwd`` (also its ``FNCORE_HOME``)."""
    return run_fncore(cwd, *args, cwd=cwd)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a command that failed with status 1, checked."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("fncore: error: agent ")
    return lines[0]


@pytest.mark.parametrize("ref", ["app:agent", "app:make", "app:amake", "app:holder.agent"])
def test_run_answers_with_your_agent(app: Path, ref: str) -> None:
    """An Agent, a sync factory, an async factory or a dotted attribute: its tools answer."""
    done = fncore(app, "run", "--agent", ref, PROMPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER
    assert "[run] start" not in done.stderr  # the example's trace middleware is not there


def test_streaming_run_with_your_agent(app: Path) -> None:
    """``--stream`` streams your agent's answer."""
    done = fncore(app, "run", "--stream", "--agent", "app:amake", PROMPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("app", "agent ref 'app' must be written 'module:attr', e.g. 'myapp:agent'"),
        ("app:", "agent ref 'app:' must be written 'module:attr', e.g. 'myapp:agent'"),
        ("nowhere:agent", "agent 'nowhere:agent': no module named 'nowhere' (looked in "),
        ("nowhere.sub:agent", "agent 'nowhere.sub:agent': no module named 'nowhere' (looked in"),
        (
            "needs_missing:agent",
            "agent 'needs_missing:agent': importing 'needs_missing' failed: "
            "ModuleNotFoundError: No module named 'not_installed_anywhere'",
        ),
        (
            "raises:agent",
            "agent 'raises:agent': importing 'raises' failed: RuntimeError: bad import-time code",
        ),
        ("app:missing", "agent 'app:missing': app has no attribute 'missing'"),
        ("app:holder.nope", "agent 'app:holder.nope': SimpleNamespace 'holder.nope' has no "),
        ("app:NUMBER", "agent 'app:NUMBER' is int 42, not an Agent or a function that returns one"),
        ("app:shout", "agent 'app:shout': function 'shout' needs arguments; give a function of"),
        ("app:boom", "agent 'app:boom': the factory raised RuntimeError: no API key: set one"),
        ("app:wrong", "agent 'app:wrong': the factory returned str 'text', not an Agent"),
    ],
)
def test_a_bad_ref_is_one_line_and_exit_1(app: Path, ref: str, message: str) -> None:
    """Each way a ref fails is one stderr line saying which, exit 1, no traceback."""
    assert one_error_line(fncore(app, "stack", "--agent", ref)).startswith(
        f"fncore: error: {message}"
    )


def test_config_names_the_agent_and_the_flag_wins(app: Path) -> None:
    """``[agent] ref`` in the file chooses the agent; ``--agent`` wins over it."""
    config = app / "fncore.toml"
    config.write_text('[agent]\nref = "app:make"\n')
    done = fncore(app, "run", "--config", str(config), PROMPT)
    assert (done.returncode, done.stdout) == (0, ANSWER), done.stderr
    config.write_text('[agent]\nref = "app:missing"\n')
    failed = fncore(app, "run", "--config", str(config), PROMPT)
    assert "app has no attribute 'missing'" in one_error_line(failed)
    done = fncore(app, "run", "--config", str(config), "--agent", "app:agent", PROMPT)
    assert (done.returncode, done.stdout) == (0, ANSWER), done.stderr


def test_the_environment_names_the_agent(app: Path) -> None:
    """``FNCORE_AGENT__REF`` chooses the agent, as every setting's variable does."""
    done = run_fncore(app, "tools", environ={"FNCORE_AGENT__REF": "app:amake"}, cwd=app)
    assert (done.returncode, done.stdout) == (0, "shout  function\n"), done.stderr


def test_stack_and_tools_show_your_agent(app: Path) -> None:
    """``stack`` shows your middleware, ``tools`` your tools, not the example's."""
    stack = fncore(app, "stack", "--agent", "app:agent")
    assert stack.returncode == 0, stack.stderr
    rows = {line.split()[0]: line.split()[1:] for line in stack.stdout.splitlines()}
    assert rows["tool_call"] == ["exclaim", "->", "(tool)"]
    assert rows["tools"] == ["shout"]
    tools = fncore(app, "tools", "--agent", "app:make")
    assert (tools.returncode, tools.stdout) == (0, "shout  function\n"), tools.stderr


def test_without_a_ref_the_example_agent_runs(app: Path) -> None:
    """No ``--agent`` and no ``[agent] ref``: the example agent, as before."""
    done = fncore(app, "tools")
    assert done.stdout.split()[::2] == ["add", "multiply", "word_count"]


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--provider", "test"], "--provider applies"),
        (["--model", "m", "--base-url", "http://x"], "--model, --base-url apply"),
        (["--trace"], "--trace applies"),
    ],
)
def test_model_flags_are_refused_with_your_agent(app: Path, flags: list[str], named: str) -> None:
    """Flags that configure the example agent are refused, not ignored, with yours."""
    done = fncore(app, "run", "--agent", "app:agent", *flags, PROMPT)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"fncore: error: {named} to the example agent only; agent 'app:agent' brings its "
        "own model and middleware"
    ]


def test_your_agent_pauses_and_resumes_in_a_new_process(app: Path) -> None:
    """A paused run of your agent exits 3; ``resume --agent`` finishes it from its store."""
    paused = fncore(app, "run", "--agent", "app:careful", PROMPT)
    assert paused.returncode == 3, paused.stderr
    checkpoint = paused.stdout.splitlines()[-1]
    assert re.fullmatch(r"[0-9a-f]{32}", checkpoint), paused.stdout
    done = fncore(app, "resume", checkpoint, "--approve", "--agent", "app:careful")
    assert (done.returncode, done.stdout) == (0, ANSWER), done.stderr
