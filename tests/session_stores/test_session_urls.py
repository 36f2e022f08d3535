"""``[sessions] url``: its forms, its default, and one-line errors for a malformed one."""

from __future__ import annotations

from pathlib import Path

import pytest

from fncore import (
    ConfigError,
    Container,
    InMemorySessionStore,
    SqliteSessionStore,
    load_container,
    open_session_store,
)
from fncore._session_url import default_session_url, parse_session_url, redact_password
from fncore.cli import main


def test_load_container_defaults_to_sqlite_in_fncore_home(tmp_path: Path) -> None:
    """With FNCORE_HOME set, the default store is sessions.db there, made on first use."""
    container = load_container(environ={"FNCORE_HOME": str(tmp_path / "home")})
    assert container.config.sessions.url() == f"sqlite:///{tmp_path}/home/sessions.db"
    store = container.sessions()
    assert isinstance(store, SqliteSessionStore)
    assert store.path == tmp_path / "home" / "sessions.db"
    assert not (tmp_path / "home").exists()  # nothing is written until a session is used


def test_without_fncore_home_the_user_data_directory_is_used(data_home: Path) -> None:
    """Without FNCORE_HOME, platformdirs' user data directory (XDG_DATA_HOME here)."""
    container = load_container(environ={})
    assert container.config.sessions.url() == f"sqlite:///{data_home}/sessions.db"


def test_a_path_with_spaces_and_hashes_round_trips(tmp_path: Path) -> None:
    """The default URL quotes what a URL cannot hold as it is."""
    home = tmp_path / "my data #1"
    url = default_session_url({"FNCORE_HOME": str(home)})
    assert "#" not in url.removeprefix("sqlite://")
    assert parse_session_url(url).path == home / "sessions.db"


async def test_a_bare_container_keeps_sessions_in_memory() -> None:
    """``Container()`` without load_container and without the key: in memory."""
    assert isinstance(Container().sessions(), InMemorySessionStore)


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("memory://", InMemorySessionStore),
        ("sqlite:///relative.db", SqliteSessionStore),
        ("sqlite:////abs/olute.db?synchronous=NORMAL", SqliteSessionStore),
    ],
)
def test_the_url_picks_the_store(url: str, kind: type) -> None:
    """Each URL form gives its store, from the file, the environment or overrides."""
    container = load_container(environ={"FNCORE_SESSIONS__URL": url})
    assert type(container.sessions()) is kind
    assert type(open_session_store(url)) is kind


def test_the_url_is_read_from_a_config_file(tmp_path: Path) -> None:
    """``[sessions] url`` in a TOML file."""
    (tmp_path / "fncore.toml").write_text('[sessions]\nurl = "memory://"\n')
    container = load_container(tmp_path / "fncore.toml", environ={})
    assert isinstance(container.sessions(), InMemorySessionStore)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://db/app", "has scheme 'mysql'; use memory://, sqlite:///path"),
        ("sessions.db", "has no scheme"),
        ("memory://somewhere", "memory:// takes no host, path or options"),
        ("sqlite://sessions.db", "a sqlite URL has no host: write sqlite:///sessions.db"),
        ("sqlite:///", "names no file"),
        ("sqlite:///folder/", "names no file"),
        ("sqlite:///s.db?journal=wal", "a sqlite URL takes no option 'journal'"),
        ("sqlite:///s.db#x", "a sqlite URL takes no fragment"),
        ("sqlite:///s.db?synchronous=off", "synchronous must be full or normal, not 'off'"),
        ("postgresql://app:pw@db:99999/app", "is not a valid URL"),
        ("postgresql://db:0/app", "the port must be between 1 and 65535"),
    ],
)
def test_a_malformed_url_is_one_config_error_line(url: str, says: str) -> None:
    """A malformed URL names the key, where it came from and what to write; no password."""
    with pytest.raises(ConfigError) as raised:
        load_container(environ={"FNCORE_SESSIONS__URL": url})
    message = str(raised.value)
    assert message.startswith("config key 'sessions.url' from FNCORE_SESSIONS__URL: ")
    assert says in message
    assert "\n" not in message
    assert ":pw@" not in message
    with pytest.raises(ConfigError, match="session store URL: "):
        open_session_store(url)


def test_the_command_line_prints_a_bad_url_on_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fncore run`` with a malformed sessions URL: one error line, exit status 1."""
    monkeypatch.setenv("FNCORE_SESSIONS__URL", "sqlite://sessions.db")
    assert main(["run", "hi"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("fncore: error: config key 'sessions.url' from FNCORE_SESSIONS__URL")


def test_passwords_are_redacted() -> None:
    """Only the password is replaced; a URL without one is unchanged."""
    assert redact_password("postgresql://a:b@h/d") == "postgresql://a:[redacted]@h/d"
    assert redact_password("postgresql://a@h/d") == "postgresql://a@h/d"
    assert redact_password("postgresql://h:x/d") == "postgresql://h:x/d"  # no password
    assert redact_password("postgresql://[oops/d") == "postgresql://[oops/d"  # not a URL


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:s3cr/et@db/app",  # an unencoded '/': the parser sees a port 's3cr'
        "postgresql://app:s3cret@[db/app",  # a malformed host
        "postgres://app:s3@cret@db/app",  # an unencoded '@'
        "memory://app:s3cret@db",
        "sqlite://app:s3cret@db/s.db",
        "redis://app:s3cret@db",
    ],
)
def test_a_malformed_url_never_shows_its_password(url: str) -> None:
    """However a URL is malformed, its message shows no piece of its password."""
    with pytest.raises(ConfigError) as raised:
        load_container(environ={"FNCORE_SESSIONS__URL": url})
    message = str(raised.value)
    assert "[redacted]" in message
    assert "s3" not in message
    assert "cr" not in message


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://app:s3%zzcret@db/app", 'invalid percent-encoded token: "[redacted]"'),
        (
            "postgresql://app:s3 cret@db/app",
            'unexpected spaces found in "[redacted]", use percent-encoded spaces (%20) instead',
        ),
    ],
)
def test_what_libpq_cannot_read_is_shown_without_the_password(url: str, says: str) -> None:
    """The token libpq quotes when it cannot read it is hidden when it is the password."""
    with pytest.raises(ConfigError) as raised:
        open_session_store(url)
    message = str(raised.value)
    assert message == f"session store URL 'postgresql://app:[redacted]@db/app': {says}"


def test_the_password_is_redacted_even_where_the_url_does_not_parse() -> None:
    """A URL urlsplit refuses, or reads without a password, still has its password hidden."""
    assert redact_password("postgresql://a:b@[h/d") == "postgresql://a:[redacted]@[h/d"
    assert redact_password("postgresql://a:b/c@h/d") == "postgresql://a:[redacted]@h/d"
    assert redact_password("postgresql://h:5432/d?x=a@b") == "postgresql://h:5432/d?x=a@b"


def test_the_memory_store_stands_with_the_other_session_stores() -> None:
    """`fncore.session_stores` holds `InMemorySessionStore` beside SQLite and PostgreSQL."""
    import fncore.session_stores

    assert fncore.session_stores.InMemorySessionStore is InMemorySessionStore
    assert type(fncore.session_stores.open_session_store("memory://")) is InMemorySessionStore
