"""Settings on pydantic-settings: values arrive as written; mistakes are one named line."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fncore import ConfigError, LoopSettings, load_container
from fncore.settings import Settings, load_settings


def one_line(info: pytest.ExceptionInfo[ConfigError]) -> str:
    text = str(info.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize(
    "text", ["English #1 priority", "Note: be brief", "- x", "yes", "null", "[1, 2]", "  spaced  "]
)
def test_environment_values_arrive_exactly_as_written(text: str) -> None:
    """A text setting from the environment is the variable's text, never parsed as YAML."""
    settings = load_settings(environ={"FNCORE_AGENT__INSTRUCTIONS": text})
    assert settings.agent.instructions == text


def test_environment_values_are_coerced_by_the_keys_type() -> None:
    """Numbers and booleans from the environment become numbers and booleans."""
    settings = load_settings(
        environ={
            "FNCORE_LOOP__MAX_ITERATIONS": "9",
            "FNCORE_LOOP__TOOL_TIMEOUT": "2.5",
            "FNCORE_LOOP__ENABLED": "false",
            "FNCORE_MODEL__MAX_TOKENS": "512",
        }
    )
    assert (settings.loop.max_iterations, settings.loop.tool_timeout) == (9, 2.5)
    assert settings.loop.enabled is False
    assert settings.model.max_tokens == 512


def test_the_loop_section_is_the_loop_settings() -> None:
    """The loop limits are declared once: the section is a LoopSettings."""
    settings = load_settings(environ={})
    assert isinstance(settings.loop, LoopSettings)
    assert settings.loop == LoopSettings()


def test_api_keys_never_show() -> None:
    """An API key is a SecretStr: not in the settings' repr, the config's repr or str."""
    secret = "sk-very-secret-0123456789"
    settings = load_settings(environ={"FNCORE_MODEL__API_KEY": secret})
    assert settings.model.api_key is not None
    assert settings.model.api_key.get_secret_value() == secret
    container = load_container(environ={"FNCORE_MODEL__API_KEY": secret})
    for shown in (repr(settings), str(settings), repr(container.config()), str(container.config())):
        assert secret not in shown
    assert "**********" in repr(container.config())


@pytest.mark.parametrize(
    ("environ", "words"),
    [
        ({"FNCORE_LOOP__MAX_ITERATIONS": "many"}, "FNCORE_LOOP__MAX_ITERATIONS"),
        ({"FNCORE_LOOP__MAX_ITERATONS": "3"}, "FNCORE_LOOP__MAX_ITERATONS"),
        ({"FNCORE_LOPO__MAX_ITERATIONS": "3"}, "FNCORE_LOPO__MAX_ITERATIONS: no setting 'lopo'"),
        ({"FNCORE_LOOP__HOOK_TIMEOUT": "nan"}, "positive, finite number of seconds"),
        ({"FNCORE_MODEL": "x", "FNCORE_MODEL__KIND": "test"}, "FNCORE_MODEL"),
    ],
)
def test_a_bad_variable_is_one_line_naming_it(environ: dict[str, str], words: str) -> None:
    """A malformed, unknown or conflicting variable: a one-line ConfigError naming it."""
    with pytest.raises(ConfigError) as info:
        load_settings(environ=environ)
    assert words in one_line(info)


def test_conflicting_variables_say_which_to_drop() -> None:
    """FNCORE_MODEL with FNCORE_MODEL__KIND names both and says to set one."""
    with pytest.raises(ConfigError) as info:
        load_settings(environ={"FNCORE_MODEL": "x", "FNCORE_MODEL__KIND": "test"})
    text = one_line(info)
    assert "FNCORE_MODEL__KIND" in text
    assert "one or the other" in text


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("bad.toml", b"[loop\n", "is not valid TOML"),
        ("bad.yaml", b"loop: [1\n", "is not valid YAML"),
        ("latin1.toml", '[agent]\ninstructions = "caf\xe9"\n'.encode("latin-1"), "not UTF-8"),
        ("latin1.yaml", "agent:\n  instructions: caf\xe9\n".encode("latin-1"), "not UTF-8"),
        ("list.yaml", b"- 1\n- 2\n", "mapping of keys at the top level"),
        ("types.toml", b"[loop]\nmax_iterations = 'many'\n", "'loop.max_iterations'"),
        ("unknown.toml", b"[loop]\nmax_iteratons = 3\n", "'loop.max_iteratons'"),
        ("top.yaml", b"mdoel:\n  name: x\n", "'mdoel'"),
        ("preset.toml", b"[models.openai]\nnaem = 'x'\n", "'models.openai.naem'"),
    ],
)
def test_a_malformed_file_is_one_line_naming_the_file_and_key(
    tmp_path: Path, name: str, content: bytes, words: str
) -> None:
    """Bad TOML or YAML, not UTF-8, wrong types, unknown keys: the file and the key, one line."""
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    text = one_line(info)
    assert str(path) in text
    assert words in text


def test_each_source_is_named_in_its_errors(tmp_path: Path) -> None:
    """An error names the source the bad value came from: overrides, variable or file."""
    path = tmp_path / "c.toml"
    path.write_text("[loop]\nmax_iterations = 0\n")
    with pytest.raises(ConfigError, match=r"from .*c\.toml"):
        load_settings(path, environ={})
    with pytest.raises(ConfigError, match="from FNCORE_LOOP__MAX_ITERATIONS"):
        load_settings(path, environ={"FNCORE_LOOP__MAX_ITERATIONS": "-1"})
    with pytest.raises(ConfigError, match="from overrides"):
        load_settings(path, environ={}, overrides={"loop": {"max_iterations": -2}})


def test_a_preset_fills_only_what_no_source_set(tmp_path: Path) -> None:
    """The selected kind's preset fills the model section; explicit keys win, from any source."""
    path = tmp_path / "c.toml"
    path.write_text(
        '[models.anthropic]\nname = "claude-x"\ntimeout = 30\n[models.openai]\nname = "gpt-x"\n'
    )
    chosen = load_settings(path, environ={"FNCORE_MODEL__KIND": "anthropic"})
    assert (chosen.model.name, chosen.model.timeout) == ("claude-x", 30.0)
    explicit = load_settings(
        path, environ={"FNCORE_MODEL__KIND": "openai", "FNCORE_MODEL__NAME": "mine"}
    )
    assert explicit.model.name == "mine"
    assert load_settings(path, environ={}).model.name == "test"  # kind test: no preset


def test_the_test_model_takes_its_options_and_refuses_others() -> None:
    """model.options is not ignored for kind test: chunk and keep_requests apply, others fail."""
    container = load_container(
        overrides={"model": {"options": {"chunk": 3, "keep_requests": 2}}}, environ={}
    )
    model = container.model()
    agent = container.agent()
    for _ in range(5):
        asyncio.run(agent.run("hello there"))
    assert model.chunk == 3  # type: ignore[attr-defined]
    assert len(model.requests) == 2  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"model\.options\.temperature"):
        load_container(overrides={"model": {"options": {"temperature": 1}}}, environ={}).model()


def test_the_default_agent_stays_bounded() -> None:
    """The embedded default model keeps a bounded number of requests, however long it runs."""
    agent = load_container(environ={}).agent()
    for _ in range(50):
        asyncio.run(agent.run("hi"))
    assert len(agent.model.requests) == 16  # type: ignore[attr-defined]


def test_settings_read_the_given_environ_or_the_process_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """environ= makes a load independent of the process; without it the process's is read."""
    monkeypatch.setenv("FNCORE_LOOP__MAX_ITERATIONS", "7")
    assert load_settings(environ={}).loop.max_iterations == 40
    assert load_settings().loop.max_iterations == 7
    assert Settings().loop.max_iterations == 7


def test_urls_show_without_their_passwords_in_a_repr() -> None:
    """A password in the session store's URL or a model's base URL never shows in a repr."""
    settings = load_settings(
        overrides={
            "sessions": {"url": "postgresql://app:hunter2@db:5432/app"},
            "model": {"base_url": "https://user:s3cret@proxy.example/v1"},
        },
        environ={},
    )
    shown = repr(settings)
    assert "hunter2" not in shown
    assert "s3cret" not in shown
    assert "postgresql://app:[redacted]@db:5432/app" in shown
    assert settings.sessions.url == "postgresql://app:hunter2@db:5432/app"  # the value is kept
