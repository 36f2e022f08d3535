"""The ``[durable]`` table, and what the engine makes of it: URL, executor id, app version."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_support import Work

from fncore.durable import DurableRuntime
from fncore.durable._config import app_version, durable_url, executor_id
from fncore.settings import ConfigError, DurableSettings, load_settings


def test_the_durable_table_is_read_with_its_secret_url_hidden() -> None:
    """Every key loads; the URL's password shows nowhere but in ``get_secret_value``."""
    settings = load_settings(
        overrides={
            "durable": {
                "url": "postgresql://app:hunter2@db/app",
                "global_concurrency": 8,
                "worker_concurrency": 2,
                "rate_limit": {"limit": 100, "period": 60},
                "drain_timeout": 0,
            }
        },
        environ={"FNCORE_DURABLE__QUEUE": "runs"},
    )
    durable = settings.durable
    assert durable is not None
    assert (durable.queue, durable.global_concurrency, durable.worker_concurrency) == (
        "runs",
        8,
        2,
    )
    assert durable.rate_limit is not None
    assert durable.rate_limit.period == 60.0
    assert durable.url is not None
    assert durable.url.get_secret_value() == "postgresql://app:hunter2@db/app"
    for shown in (str(durable.url), repr(durable), repr(settings)):
        assert "hunter2" not in shown
    assert load_settings(environ={}).durable is None


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"url": "memory://"}, "memory:// cannot hold durable runs"),
        ({"url": "redis://x"}, "scheme 'redis'"),
        ({"worker_concurrency": 0}, "greater than or equal to 1"),
        ({"rate_limit": {"limit": 5}}, "rate_limit.period"),
        ({"queue": ""}, "at least 1 character"),
        ({"executor": "w1"}, "durable.executor"),
    ],
)
def test_a_wrong_durable_key_is_one_config_error(given: dict[str, object], says: str) -> None:
    """Each mistake is one line naming the key."""
    with pytest.raises(ConfigError, match="durable") as raised:
        load_settings(overrides={"durable": given}, environ={})
    assert says in str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_default_database_is_beside_the_sessions(tmp_path: Path) -> None:
    """``durable.sqlite`` in fncore's data directory, which is made if missing."""
    home = tmp_path / "home"
    url = durable_url(DurableSettings(), {"FNCORE_HOME": str(home)})
    assert url == f"sqlite:///{home}/durable.sqlite"
    assert home.is_dir()
    given = DurableSettings(url="postgres://u:p@db/x")  # type: ignore[arg-type]
    assert durable_url(given, {}) == "postgresql://u:p@db/x"


def test_the_default_executor_id_is_made_once_and_kept(tmp_path: Path) -> None:
    """A restarted worker gets the same id (so it recovers its runs); a set one wins."""
    environ = {"FNCORE_HOME": str(tmp_path)}
    first = executor_id(DurableSettings(), environ)
    assert executor_id(DurableSettings(), environ) == first
    assert (tmp_path / "worker-id").read_text().strip() == first
    assert executor_id(DurableSettings(executor_id="w9"), environ) == "w9"
    assert [p.name for p in tmp_path.iterdir()] == ["worker-id"]


def test_the_app_version_follows_the_stacks_of_the_agents() -> None:
    """Same stacks, same version; another tool or agent name, another version."""

    def spare() -> str:
        """Spare."""
        return ""

    one = DurableRuntime([Work().agent()], executor_id="w")
    same = DurableRuntime([Work().agent()], executor_id="w")
    other = DurableRuntime([Work().agent(tools=[spare])], executor_id="w")
    renamed = DurableRuntime([Work().agent(name="other")], executor_id="w")
    assert one.app_version == same.app_version
    assert len({one.app_version, other.app_version, renamed.app_version}) == 3
    assert one.app_version.startswith("fncore-")
    assert app_version({}) != app_version({"a": "x"})
