"""`fncore run --provider ...` against a local server: configuration alone picks the provider."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_provider import FakeProvider, Reply, free_port, sse

from fncore.cli import main

PROMPT = "What is 2 + 3?"
KEY = "sk-cli-SECRET-0123456789"


def _chat(text: str) -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        }
    )


def _chat_stream(text: str) -> Reply:
    def chunk(delta: dict[str, object], finish: str | None = None) -> tuple[None, object]:
        return None, {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    return sse(chunk({"role": "assistant", "content": text}), chunk({}, "stop"), (None, "[DONE]"))


def _response(text: str) -> Reply:
    return Reply(
        body={
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "model": "gpt-test",
            "status": "completed",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
            "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
        }
    )


def _message(text: str) -> Reply:
    return Reply(
        body={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 2},
        }
    )


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "FNCORE_MODEL__KIND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FNCORE_MODEL__MAX_RETRIES", "0")


@pytest.mark.parametrize(
    ("kind", "suffix", "reply", "path"),
    [
        ("openai", "/v1", _chat, "/v1/chat/completions"),
        ("openai-responses", "/v1", _response, "/v1/responses"),
        ("anthropic", "", _message, "/v1/messages"),
    ],
)
def test_each_provider_kind_runs_from_flags_alone(
    kind: str,
    suffix: str,
    reply: object,
    path: str,
    fake_provider: FakeProvider,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--provider, --model and --base-url (plus the key variable) reach the right endpoint."""
    assert callable(reply)
    monkeypatch.setenv("OPENAI_API_KEY" if kind.startswith("openai") else "ANTHROPIC_API_KEY", KEY)
    fake_provider.reply(reply("It is 5."))
    argv = ["run", "--provider", kind, "--model", "m-1", "--base-url", fake_provider.url + suffix]
    assert main([*argv, PROMPT]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "It is 5."
    assert "[model_call]" in err
    assert fake_provider.requests[0].path == path
    assert fake_provider.requests[0].body["model"] == "m-1"
    assert KEY not in out + err


def test_streaming_run_against_an_openai_compatible_server(
    fake_provider: FakeProvider, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--stream prints the streamed text from an OpenAI-compatible server."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    fake_provider.reply(_chat_stream("Streamed five."))
    url = fake_provider.url + "/v1"
    assert main(["run", "--provider", "openai", "--base-url", url, "--stream", PROMPT]) == 0
    assert capsys.readouterr().out.strip() == "Streamed five."
    assert fake_provider.requests[0].body["stream"] is True


def test_one_config_file_switches_provider(
    tmp_path: Path,
    fake_provider: FakeProvider,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file with per-kind presets: FNCORE_MODEL__KIND alone moves the agent to Anthropic."""
    config = tmp_path / "fncore.toml"
    config.write_text(
        f"""
[model]
kind = "test"

[models.anthropic]
name = "claude-test"
base_url = "{fake_provider.url}"
api_key = "{KEY}"
"""
    )
    assert main(["run", "--config", str(config), PROMPT]) == 0
    assert "add: 5" in capsys.readouterr().out
    monkeypatch.setenv("FNCORE_MODEL__KIND", "anthropic")
    fake_provider.reply(_message("Five, from Claude."))
    assert main(["run", "--config", str(config), PROMPT]) == 0
    assert capsys.readouterr().out.strip() == "Five, from Claude."
    assert fake_provider.requests[0].body["model"] == "claude-test"


@pytest.mark.parametrize(
    ("kind", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
def test_missing_key_is_one_line_and_exit_1(
    kind: str, variable: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No key anywhere: one error line naming the variable, exit 1, no traceback."""
    assert main(["run", "--provider", kind, PROMPT]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("fncore: error:")
    assert variable in lines[0]


def test_unreachable_server_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused connection ends the run with one error line and exit 1."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert main(["run", "--provider", "openai", "--base-url", url, PROMPT]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("fncore: error:")
    assert "connect" in last.lower()
    assert KEY not in err


@pytest.mark.parametrize("kind", ["openai", "openai-responses", "anthropic"])
def test_credentials_in_the_base_url_never_reach_stderr(
    kind: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """User info and key-like query values of --base-url are redacted in the error line."""
    monkeypatch.setenv("FNCORE_MODEL__API_KEY", KEY)
    monkeypatch.setenv("FNCORE_MODEL__MAX_RETRIES", "0")
    suffix = "" if kind == "anthropic" else "/v1"
    url = f"http://alice:hunter2pw@127.0.0.1:{free_port()}{suffix}?api_key=query-secret-77"
    assert main(["run", "--provider", kind, "--base-url", url, PROMPT]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("fncore: error:")
    for secret in ("hunter2pw", "query-secret-77", KEY):
        assert secret not in err
