"""Plugins: real installed distributions, loaded by name only, failures named or skipped.

Each test installs small distributions (a package and its ``.dist-info`` with an entry point
in group ``fncore.plugins``) into a temporary directory put on ``sys.path``, the way pip
lays out site-packages, so discovery goes through ``importlib.metadata`` as in production.
"""

from __future__ import annotations

import importlib
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from fncore import RegistrationError, Registry, load_container

PLUGIN = '''
from fncore import Registry, RunContext, RunNext, RunResult, Outcome

SEEN = []


def factory(config):
    """The {name} plugin: one run middleware that marks each run."""
    SEEN.append(dict(config["app"]))
    registry = Registry()

    @registry.on("run", name="{name}")
    async def mark(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        outcome = await call_next(ctx)
        return outcome.map(lambda r: r.__class__(r.output + " [{name}]", r.messages, r.usage,
                                                  r.rounds, r.stop_reason))

    return registry
'''


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty site directory on sys.path; its modules are forgotten afterwards."""
    where = tmp_path / "site"
    where.mkdir()
    monkeypatch.syspath_prepend(str(where))
    importlib.invalidate_caches()
    before = set(sys.modules)
    yield where
    for name in set(sys.modules) - before:
        if name.startswith("fncore_plugin_"):
            del sys.modules[name]


def install(site: Path, name: str, source: str, *, entry: str = "factory") -> Path:
    """Install distribution ``fncore-plugin-<name>`` whose entry point ``name`` is ``entry``."""
    module = f"fncore_plugin_{name}"
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"fncore_plugin_{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: fncore-plugin-{name}\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(f"[fncore.plugins]\n{name} = {module}:{entry}\n")
    importlib.invalidate_caches()
    return site / f"{module}.py"


def container_with(plugins: dict[str, list[str]], app: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    """A container allowing ``plugins`` (no environment)."""
    return load_container(overrides={"plugins": plugins, "app": app or {}}, environ={})


async def test_an_allowed_plugin_runs_and_gets_the_configuration(site: Path) -> None:
    """An allowed plugin's middleware runs in agents the container builds."""
    install(site, "audit", PLUGIN.replace("{name}", "audit"))
    container = container_with({"allow": ["audit"]}, app={"team": "blue"})
    agent = container.agent()
    assert "audit" in agent.describe().positions["run"]
    assert (await agent.run("hi")).unwrap().output == "hi [audit]"
    plugin = importlib.import_module("fncore_plugin_audit")
    assert plugin.SEEN == [{"team": "blue"}]


async def test_an_allowed_plugin_runs_with_a_registry_given_too(site: Path) -> None:
    """container.agent(registry=...) replaces the default registry, not the plugins."""
    install(site, "audit", PLUGIN.replace("{name}", "audit"))
    agent = container_with({"allow": ["audit"]}).agent(registry=Registry())
    assert (await agent.run("hi")).unwrap().output == "hi [audit]"


def test_a_plugin_that_is_not_allowed_is_never_imported(site: Path) -> None:
    """Installed but not allowed: its module never runs, not even when it is broken."""
    install(site, "audit", PLUGIN.replace("{name}", "audit"))
    marker = site / "imported"
    install(site, "evil", f"open({str(marker)!r}, 'w').write('ran')\nraise RuntimeError('boom')\n")
    agent = container_with({"allow": ["audit"]}).agent()
    assert "audit" in agent.describe().positions["run"]
    assert not marker.exists()
    assert "fncore_plugin_evil" not in sys.modules


@pytest.mark.parametrize(
    ("source", "entry", "words"),
    [
        ("raise ImportError('no such dependency')\n", "factory", "ImportError: no such dependency"),
        ("def factory(config):\n    raise ValueError('bad setting')\n", "factory", "bad setting"),
        ("def factory(config):\n    return {}\n", "factory", "returned dict, not a Registry"),
        ("def factory(config):\n    return []\n", "factory", "returned list, not a Registry"),
        (
            "from fncore import Registry\ndef factory(config):\n    return Registry\n",
            "factory",
            "returned the class Registry, not a Registry",
        ),
        ("x = 1\n", "factory", "AttributeError"),
    ],
    ids=["import fails", "factory raises", "dict", "list", "class", "no factory"],
)
def test_a_required_plugin_that_fails_is_a_registration_error_naming_it(
    site: Path, source: str, entry: str, words: str
) -> None:
    """Import failures, raising factories and wrong return values name the plugin and cause."""
    install(site, "broken", source, entry=entry)
    with pytest.raises(RegistrationError) as info:
        container_with({"allow": ["broken"]}).agent()
    message = str(info.value)
    assert message.startswith("plugin 'broken' ")
    assert words in message
    assert "plugins.optional" in message
    assert "\n" not in message


def test_an_optional_plugin_that_fails_is_skipped_with_a_warning(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An optional plugin that fails to import, or is missing, is skipped and logged by name."""
    install(site, "audit", PLUGIN.replace("{name}", "audit"))
    install(site, "flaky", "raise ImportError('missing extra')\n")
    with caplog.at_level(logging.WARNING, logger="fncore"):
        agent = container_with(
            {"allow": ["flaky", "gone", "audit"], "optional": ["flaky", "gone"]}
        ).agent()
    assert agent.describe().positions["run"] == ("audit",)
    warnings = [r.getMessage() for r in caplog.records]
    assert any("optional plugin 'flaky' skipped" in w and "missing extra" in w for w in warnings)
    assert any("optional plugin 'gone' skipped" in w and "not installed" in w for w in warnings)


def test_a_missing_required_plugin_lists_the_installed_ones(site: Path) -> None:
    """Allowed but not installed: an error listing what is installed, without importing it."""
    install(site, "audit", PLUGIN.replace("{name}", "audit"))
    with pytest.raises(RegistrationError, match=r"plugin 'missing' .*installed: .*audit"):
        container_with({"allow": ["missing"]}).agent()
    assert "fncore_plugin_audit" not in sys.modules


def test_a_plugin_returning_none_opts_out(site: Path) -> None:
    """A factory returning None contributes nothing, without error."""
    install(site, "quiet", "def factory(config):\n    return None\n")
    assert container_with({"allow": ["quiet"]}).agent().describe().positions["run"] == ()


def test_the_cli_applies_the_plugins_configuration(site: Path, tmp_path: Path) -> None:
    """`fncore run` builds its agent through the container: plugins.allow applies there."""
    install(site, "audit", PLUGIN.replace("{name}", "audit"))
    config = tmp_path / "fncore.toml"
    env = {"PATH": "", "PYTHONPATH": str(site)}
    command = [sys.executable, "-m", "fncore.cli", "--config", str(config), "run", "1 2"]

    config.write_text('[plugins]\nallow = ["audit"]\n')
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("[audit]")

    config.write_text('[plugins]\nallow = ["missing"]\n')
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("fncore: error: plugin 'missing' is allowed in configuration")
