"""``fncore run --session`` and ``fncore sessions``: the real command line, in subprocesses.

Each test gets its own ``FNCORE_HOME``, so the default store is a fresh ``sessions.db``.
"""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_provider import free_port
from support import run_fncore

from fncore import (
    DataPart,
    InMemorySessionStore,
    Message,
    ReasoningPart,
    Session,
    SessionUpdate,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from fncore.cli._errors import CommandFailed
from fncore.cli._sessions import as_catalog, render_message

PROMPT = "What is 2 + 3?"
ANSWER = "add: 5; multiply: 6; word_count: 5"
SECRET = "hunter2"

SHOWN = """\
user:
  What is 2 + 3?

assistant:
  call add({"a":2,"b":3}) [call_0_0]
  call multiply({"a":2,"b":3}) [call_0_1]
  call word_count({"text":"What is 2 + 3?"}) [call_0_2]

tool:
  result of add [call_0_0]: 5
  result of multiply [call_0_1]: 6
  result of word_count [call_0_2]: 5

assistant:
  add: 5; multiply: 6; word_count: 5
"""
"""``fncore sessions show`` of a session that answered `PROMPT` once."""


def fncore(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``fncore args`` in a subprocess with ``FNCORE_HOME=home``."""
    return run_fncore(home, *args)


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """``done``, checked to have succeeded."""
    assert done.returncode == 0, done.stderr
    return done


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a command that failed with status 1 (nothing on stdout)."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("fncore: error: ")
    assert "Traceback" not in done.stderr
    return lines[0]


def history_seen(done: subprocess.CompletedProcess[str]) -> str:
    """The first model call's trace line: how many messages the model was sent."""
    return next(line for line in done.stderr.splitlines() if line.startswith("[model_call]"))


def test_a_conversation_continues_across_invocations(tmp_path: Path) -> None:
    """Each `run --session` is a new process that sends the model the session's history."""
    first = ok(fncore(tmp_path, "run", "--session", "ada", PROMPT))
    assert first.stdout == ANSWER + "\n"
    assert "test model, 1 message," in history_seen(first)
    second = ok(fncore(tmp_path, "run", "--session", "ada", "And 4 times 5?"))
    assert second.stdout == "add: 9; multiply: 20; word_count: 4\n"
    assert "test model, 5 messages," in history_seen(second)  # 4 before, then the prompt
    streamed = ok(fncore(tmp_path, "run", "--stream", "--session", "ada", "Once more"))
    assert "test model, 9 messages," in history_seen(streamed)
    assert ok(fncore(tmp_path, "sessions", "list")).stdout == "ada  12 messages  version 3\n"


def test_a_run_without_a_session_writes_nothing(tmp_path: Path) -> None:
    """Without --session the store is never opened: no file is made."""
    ok(fncore(tmp_path, "run", PROMPT))
    assert not tmp_path.joinpath("sessions.db").exists()


def test_list_show_and_delete(tmp_path: Path) -> None:
    """`sessions list` sorts by name; `show` prints the conversation; `delete` forgets one."""
    for name in ("bob", "ada", "ada", "carl"):
        ok(fncore(tmp_path, "run", "--session", name, PROMPT))
    assert ok(fncore(tmp_path, "sessions", "list")).stdout == (
        "ada   8 messages  version 2\nbob   4 messages  version 1\ncarl  4 messages  version 1\n"
    )
    shown = ok(fncore(tmp_path, "sessions", "show", "bob"))
    assert shown.stdout == SHOWN
    assert shown.stderr == ""
    deleted = ok(fncore(tmp_path, "sessions", "delete", "bob"))
    assert deleted.stdout == "deleted session bob\n"
    assert ok(fncore(tmp_path, "sessions", "list")).stdout.splitlines() == [
        "ada   8 messages  version 2",
        "carl  4 messages  version 1",
    ]
    for action in ("show", "delete"):
        line = one_error(fncore(tmp_path, "sessions", action, "bob"))
        assert line == (
            f"fncore: error: no session 'bob' in sqlite:///{tmp_path}/sessions.db; "
            "'fncore sessions list' shows the sessions there"
        )


def test_names_that_are_not_one_word_are_quoted(tmp_path: Path) -> None:
    """A name with a space is listed quoted, and found again by `show` as written."""
    ok(fncore(tmp_path, "run", "--session", "my notes", PROMPT))
    assert ok(fncore(tmp_path, "sessions", "list")).stdout == "'my notes'  4 messages  version 1\n"
    assert ok(fncore(tmp_path, "sessions", "show", "my notes")).stdout == SHOWN
    assert ok(fncore(tmp_path, "sessions", "delete", "my notes")).stdout == (
        "deleted session 'my notes'\n"
    )


def test_an_empty_store_lists_nothing_and_makes_no_file(tmp_path: Path) -> None:
    """With no store file yet, `list` prints nothing on stdout, says so, and makes nothing."""
    done = ok(fncore(tmp_path, "sessions", "list"))
    assert done.stdout == ""
    assert done.stderr == f"no sessions in sqlite:///{tmp_path}/sessions.db\n"
    assert one_error(fncore(tmp_path, "sessions", "show", "ada")).startswith(
        "fncore: error: no session 'ada' in "
    )
    assert not tmp_path.joinpath("sessions.db").exists()
    ok(fncore(tmp_path, "run", "--session", "ada", PROMPT))
    ok(fncore(tmp_path, "sessions", "delete", "ada"))
    done = ok(fncore(tmp_path, "sessions", "list"))  # a store that exists and is empty
    assert (done.stdout, done.stderr) == ("", f"no sessions in sqlite:///{tmp_path}/sessions.db\n")


def test_a_memory_store_forgets_when_the_process_ends(tmp_path: Path) -> None:
    """With memory:// each invocation starts afresh: the run works, nothing is kept."""
    config = tmp_path / "fncore.toml"
    config.write_text('[sessions]\nurl = "memory://"\n', encoding="utf-8")
    for _ in range(2):
        done = ok(fncore(tmp_path, "--config", str(config), "run", "--session", "ada", PROMPT))
        assert "test model, 1 message," in history_seen(done)
    listed = ok(fncore(tmp_path, "--config", str(config), "sessions", "list"))
    assert (listed.stdout, listed.stderr) == ("", "no sessions in memory://\n")
    assert not tmp_path.joinpath("sessions.db").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions"],
        ["sessions", "show"],
        ["sessions", "drop", "ada"],
        ["run", "--session", "", PROMPT],
        ["sessions", "show", " "],
    ],
)
def test_a_bad_sessions_command_line_exits_2(tmp_path: Path, argv: list[str]) -> None:
    """A missing action or name, an unknown action, an empty name: one line, exit 2."""
    done = fncore(tmp_path, *argv)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("fncore: error: ")


def test_sessions_commands_take_config(tmp_path: Path) -> None:
    """`--config` before or after the action chooses the store (here, another file)."""
    config = tmp_path / "fncore.toml"
    other = tmp_path / "elsewhere" / "chats.db"
    config.write_text(f'[sessions]\nurl = "sqlite:///{other}"\n', encoding="utf-8")
    ok(fncore(tmp_path, "run", "--config", str(config), "--session", "ada", PROMPT))
    assert other.exists()
    assert not tmp_path.joinpath("sessions.db").exists()
    for argv in (
        ["--config", str(config), "sessions", "list"],
        ["sessions", "--config", str(config), "list"],
        ["sessions", "list", "--config", str(config)],
    ):
        assert ok(fncore(tmp_path, *argv)).stdout == "ada  4 messages  version 1\n"


def _text_file(path: Path) -> None:
    path.write_text("my shopping list\n", encoding="utf-8")


def _foreign(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO notes VALUES ('keep me')")
    db.close()


def _store_with_a_session(path: Path) -> None:
    ok(fncore(path.parent, "run", "--session", "ada", PROMPT))
    assert path.exists()


def _newer(path: Path) -> None:
    _store_with_a_session(path)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    db.close()


def _damaged(path: Path) -> None:
    _store_with_a_session(path)
    data = bytearray(path.read_bytes())
    page = 4096  # the default page size: the tables live on the pages after the first
    data[page + 8 : 3 * page] = b"Z" * (2 * page - 8)
    path.write_bytes(data)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (_text_file, "is not a SQLite database (another kind of file, or a damaged one)"),
        (_foreign, "is a SQLite database of another application, not a session store"),
        (_newer, "has version 99, and this fncore reads up to 2: a newer fncore wrote it"),
        (_damaged, "is damaged (database disk image is malformed): restore it from a backup"),
    ],
    ids=["text-file", "foreign-sqlite", "newer-schema", "damaged"],
)
def test_an_unusable_sqlite_file_is_one_line_and_left_as_it_was(
    tmp_path: Path, make: Callable[[Path], None], says: str
) -> None:
    """A foreign, newer or damaged file: one line and exit 1 for each command; bytes kept."""
    path = tmp_path / "sessions.db"
    make(path)
    before = path.read_bytes()
    for argv in (
        ["sessions", "list"],
        ["sessions", "show", "ada"],
        ["sessions", "delete", "ada"],
        ["run", "--session", "ada", PROMPT],
    ):
        line = one_error(fncore(tmp_path, *argv))
        assert says in line, (argv, line)
        assert repr(str(path)) in line
        if make is not _damaged:  # found when the store is opened, before the run starts
            assert "could not load session" not in line
    assert path.read_bytes() == before


def test_a_malformed_sessions_url_is_one_line_without_its_password(tmp_path: Path) -> None:
    """A malformed [sessions] url names the key and the file, and hides the password."""
    config = tmp_path / "fncore.toml"
    config.write_text(f'[sessions]\nurl = "postgresql://app:{SECRET}@[db/app"\n', encoding="utf-8")
    for argv in (["sessions", "list"], ["run", "--session", "ada", PROMPT]):
        line = one_error(fncore(tmp_path, "--config", str(config), *argv))
        assert line.startswith(f"fncore: error: config key 'sessions.url' from {config}: ")
        assert "'postgresql://app:[redacted]@[db/app' is not a valid URL" in line
        assert SECRET not in line


def test_an_unreachable_postgresql_is_one_line_without_its_password(tmp_path: Path) -> None:
    """No server on the port: one line naming the URL (password redacted) and what to check."""
    url = f"postgresql://app:{SECRET}@127.0.0.1:{free_port()}/app"
    config = tmp_path / "fncore.toml"
    config.write_text(f'[sessions]\nurl = "{url}"\n', encoding="utf-8")
    for argv in (["sessions", "list"], ["run", "--session", "ada", PROMPT]):
        line = one_error(fncore(tmp_path, "--config", str(config), *argv))
        shown = url.replace(SECRET, "[redacted]")
        assert f"cannot reach the session store '{shown}'" in line
        assert "check that PostgreSQL runs there and sessions.url" in line
        assert SECRET not in line


def test_a_conversation_continues_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """With [sessions] url on PostgreSQL, `run --session` continues there; the commands work."""
    url = postgres_url.replace("fncore@", f"fncore:{SECRET}@")  # trust login: ignored
    config = tmp_path / "fncore.toml"
    config.write_text(f'[sessions]\nurl = "{url}"\n', encoding="utf-8")
    shared = ["--config", str(config)]
    first = ok(fncore(tmp_path, "run", *shared, "--session", "ada", PROMPT))
    second = ok(fncore(tmp_path, "run", *shared, "--session", "ada", "And 4 times 5?"))
    assert "test model, 1 message," in history_seen(first)
    assert "test model, 5 messages," in history_seen(second)
    assert ok(fncore(tmp_path, "sessions", *shared, "list")).stdout == (
        "ada  8 messages  version 2\n"
    )
    assert ok(fncore(tmp_path, "sessions", *shared, "show", "ada")).stdout.startswith(SHOWN)
    ok(fncore(tmp_path, "sessions", *shared, "delete", "ada"))
    emptied = ok(fncore(tmp_path, "sessions", *shared, "list"))
    assert emptied.stdout == ""
    assert emptied.stderr == f"no sessions in {url.replace(SECRET, '[redacted]')}\n"
    assert not tmp_path.joinpath("sessions.db").exists()


# In-process: what the subprocesses cannot reach.


class _LoadCommitOnly:
    """A session store of one's own that only loads and commits (no listing)."""

    async def load(self, session_id: str) -> Session | None:
        return None

    async def commit(self, update: SessionUpdate) -> Session | None:
        return update.apply(None)


def test_a_store_that_cannot_list_is_a_one_line_error() -> None:
    """A store without list_sessions/delete is refused, naming what it lacks."""
    with pytest.raises(CommandFailed) as raised:
        as_catalog(_LoadCommitOnly(), "custom://")
    assert str(raised.value) == (
        "the session store custom:// (_LoadCommitOnly) cannot list or delete sessions: "
        "give it list_sessions() and delete() (see SessionCatalog)"
    )
    store = InMemorySessionStore()
    assert as_catalog(store, "memory://") is store


def test_every_kind_of_part_is_rendered_readably() -> None:
    """Text (several lines), reasoning, data, calls, results and errors, one line or more."""
    assistant = Message(
        "assistant",
        (
            ReasoningPart("Add them.\nThen answer."),
            ReasoningPart("", redacted="opaque"),
            TextPart("Let me check."),
            ToolCallPart("c1", "add", '{"a":1}'),
        ),
    )
    tool = Message(
        "tool",
        (
            ToolResultPart("c1", "add", "line one\nline two"),
            ToolResultPart("c2", "fetch", "timed out", is_error=True),
            ToolResultPart("c3", "noop", ""),
        ),
    )
    user = Message("user", (TextPart("first\n\nthird"), DataPart(b"\x89PNG", "image/png")))
    assert render_message(assistant) == (
        "assistant:\n"
        "  thinking: Add them.\n"
        "    Then answer.\n"
        "  thinking: [redacted]\n"
        "  Let me check.\n"
        '  call add({"a":1}) [c1]'
    )
    assert render_message(tool) == (
        "tool:\n"
        "  result of add [c1]:\n"
        "    line one\n"
        "    line two\n"
        "  error from fetch [c2]: timed out\n"
        "  result of noop [c3]:"
    )
    assert render_message(user) == "user:\n  first\n\n  third\n  [image/png, 4 bytes]"
    assert render_message(Message("assistant", ())) == "assistant:"
