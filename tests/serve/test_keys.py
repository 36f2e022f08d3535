"""API keys, tenants and CORS of the served app, through a real uvicorn."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping

import openai
import pytest
from openai import OpenAI
from served import running
from starlette.applications import Starlette

from fncore import Agent, Registry
from fncore.middleware import budget
from fncore.serve import ServeSettings, create_app
from fncore.serve._auth import run_metadata
from fncore.settings import ConfigError, load_settings
from fncore.testing import FunctionModel, TestModel

ACME, GLOBEX = "sk-acme-7f3e9a", "sk-globex-1b2c4d"
KEYS = {"acme": ACME, "globex": GLOBEX}
USER = [{"role": "user", "content": "hi"}]


def call(
    url: str,
    path: str,
    *,
    key: str | None = None,
    body: object = None,
    method: str = "GET",
    extra: Mapping[str, str] | None = None,
) -> tuple[int, Mapping[str, str], bytes]:
    """The status, headers and body of one request (with ``extra`` headers) to ``url``."""
    headers = {"content-type": "application/json", **(extra or {})}
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}{path}", data, headers, method=method)
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read()


@pytest.fixture
def root() -> Iterator[str]:
    """An app with two tenants' keys on a real server: its root URL."""
    app = create_app(Agent(TestModel(), registry=Registry()), ServeSettings(keys=KEYS))
    with running(app) as base_url:
        yield base_url.removesuffix("/v1")


@pytest.mark.parametrize(
    ("authorization", "says"),
    [
        (None, "You didn't provide an API key"),
        ("Bearer sk-wrong", "Incorrect API key provided"),
        (f"Basic {ACME}", "Incorrect API key provided"),
        (f"Bearer {ACME}x", "Incorrect API key provided"),
    ],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/v1/chat/completions"), ("GET", "/v1/models"), ("GET", "/api/sessions")],
)
def test_without_a_valid_key_the_api_answers_401_in_openais_shape(
    root: str, authorization: str | None, says: str, method: str, path: str
) -> None:
    """A missing, wrong or non-bearer key is refused with OpenAI's invalid_api_key error."""
    headers = {} if authorization is None else {"authorization": authorization}
    body = json.dumps({"model": "fncore", "messages": USER}).encode()
    request = urllib.request.Request(
        f"{root}{path}", body if method == "POST" else None, headers, method=method
    )
    with pytest.raises(urllib.error.HTTPError) as refused, urllib.request.urlopen(request):
        pass
    with refused.value as error:
        assert error.code == 401
        assert error.headers["www-authenticate"] == "Bearer"
        answer = json.loads(error.read())
    assert answer["error"]["message"].startswith(says)
    assert answer["error"] | {"message": ""} == {
        "message": "",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }


def test_health_readiness_and_the_consoles_files_need_no_key(root: str) -> None:
    """/healthz, /readyz and the console's static files answer without a key."""
    assert call(root, "/healthz")[0] == 200
    assert call(root, "/readyz")[0] == 200
    assert call(root, "/")[0] == 200  # the console's page asks for a key itself
    assert call(root, "/console/app.js")[0] == 200
    assert call(root, "/api/stack")[0] == 401


def test_each_tenants_key_opens_the_api_for_the_sdk(root: str) -> None:
    """Every configured key works with the OpenAI SDK; the SDK raises its 401 error else."""
    for key in (ACME, GLOBEX):
        with OpenAI(base_url=f"{root}/v1", api_key=key) as client:
            reply = client.chat.completions.create(model="fncore", messages=USER)  # type: ignore[arg-type]
            assert reply.choices[0].message.content == "hi"
    with (
        OpenAI(base_url=f"{root}/v1", api_key="sk-other", max_retries=0) as client,
        pytest.raises(openai.AuthenticationError),
    ):
        client.models.list()


def recording() -> tuple[Registry, list[object]]:
    """A registry whose ``run`` middleware records each run's metadata, and the records."""
    seen: list[object] = []
    registry = Registry()

    @registry.on("run")
    async def record(ctx, call_next):  # type: ignore[no-untyped-def]
        seen.append(dict(ctx.run.metadata))
        return await call_next(ctx)

    return registry, seen


@pytest.mark.parametrize("stream", [False, True])
def test_the_keys_tenant_is_each_runs_metadata(stream: bool) -> None:
    """A run started with a key sees ``{"tenant": NAME}``, streamed or not."""
    registry, seen = recording()
    app = create_app(Agent(TestModel(), registry=registry), ServeSettings(keys=KEYS))
    with running(app) as base_url, OpenAI(base_url=base_url, api_key=GLOBEX) as client:
        if stream:
            list(client.chat.completions.create(model="fncore", messages=USER, stream=True))  # type: ignore[arg-type]
        else:
            client.chat.completions.create(model="fncore", messages=USER)  # type: ignore[arg-type]
    assert seen == [{"tenant": "globex"}]


def test_without_keys_runs_have_no_tenant() -> None:
    """With no keys configured everything is open, and the metadata is empty."""
    registry, seen = recording()
    app = create_app(Agent(TestModel(), registry=registry))
    with running(app) as base_url, OpenAI(base_url=base_url, api_key="anything") as client:
        client.chat.completions.create(model="fncore", messages=USER)  # type: ignore[arg-type]
    assert seen == [{}]


def test_a_tenants_budget_is_its_own(root: str) -> None:
    """``budget(tokens_per_tenant=...)`` counts per key's tenant: one spent, the other not."""
    registry = budget(tokens_per_reply=None, tokens_per_tenant=1, exit="error")
    app = create_app(Agent(TestModel(), registry=registry), ServeSettings(keys=KEYS))
    body = {"model": "fncore", "messages": USER}
    with running(app) as base_url:
        url = base_url.removesuffix("/v1")
        chat = "/v1/chat/completions"
        assert call(url, chat, key=ACME, body=body, method="POST")[0] == 200
        status, _, answer = call(url, chat, key=ACME, body=body, method="POST")
        assert status == 429
        assert json.loads(answer)["error"]["code"] == "BudgetExceeded"
        assert call(url, chat, key=GLOBEX, body=body, method="POST")[0] == 200
        assert call(url, chat, key=GLOBEX, body=body, method="POST")[0] == 429


def test_a_key_shows_in_no_response_log_or_repr(caplog: pytest.LogCaptureFixture) -> None:
    """Keys, right or wrong, appear in no answer, no log record, and no settings repr."""
    model = FunctionModel(lambda request: "answer")
    settings = ServeSettings(keys=KEYS)
    app = create_app(Agent(model, registry=Registry()), settings)
    seen: list[bytes] = []
    body = {"model": "fncore", "messages": USER}
    with caplog.at_level(logging.DEBUG), running(app) as base_url:
        url = base_url.removesuffix("/v1")
        for key in (ACME, "sk-acme-7f3e9a0", GLOBEX[:-1], None):
            for path, method in (("/v1/chat/completions", "POST"), ("/api/stack", "GET")):
                _status, headers, answer = call(
                    url, path, key=key, body=body if method == "POST" else None, method=method
                )
                seen += [answer, json.dumps(headers).encode()]
    everything = b"".join(seen).decode() + caplog.text + repr(settings) + str(settings)
    everything += repr(model.requests)
    for secret in (ACME, GLOBEX, ACME[3:], GLOBEX[:-1]):
        assert secret not in everything
    loaded = load_settings(environ={"FNCORE_SERVE__KEYS__ACME": ACME})
    assert ACME not in repr(loaded) + str(loaded)
    assert loaded.serve.keys["acme"].get_secret_value() == ACME


def test_keys_that_could_not_work_are_refused_without_showing_them() -> None:
    """An empty key, or one shared by two tenants, is a ValueError naming the tenant only."""
    with pytest.raises(ValueError, match=r"keys\['globex'\] is another tenant's key") as shared:
        ServeSettings(keys={"acme": ACME, "globex": ACME})
    assert ACME not in str(shared.value)
    for bad in ("", " sk-padded", "sk-\nsplit"):
        with pytest.raises(ValueError, match=r"keys\['acme'\] must be printable") as refused:
            ServeSettings(keys={"acme": bad})
        assert "sk-" not in str(refused.value)
    with pytest.raises(ConfigError, match=r"serve\.keys\.acme"):
        load_settings(overrides={"serve": {"keys": {"acme": 7}}}, environ={})


def test_run_metadata_is_empty_without_a_tenant() -> None:
    """`run_metadata` gives the tenant only when a key named one."""
    from starlette.requests import Request

    assert run_metadata(Request({"type": "http", "headers": []})) == {}


def preflight(url: str) -> tuple[int, Mapping[str, str]]:
    """A browser's CORS preflight for a POST with a key, from https://app.test."""
    headers = {
        "origin": "https://app.test",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
    }
    request = urllib.request.Request(f"{url}/v1/chat/completions", None, headers, method="OPTIONS")
    try:
        with urllib.request.urlopen(request) as reply:
            return reply.status, dict(reply.headers)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers)


def cors_app(origins: tuple[str, ...]) -> Starlette:
    """An app with keys and the given CORS origins."""
    agent = Agent(TestModel(), registry=Registry())
    return create_app(agent, ServeSettings(keys=KEYS, cors_origins=origins))


def test_cors_is_off_unless_origins_are_configured() -> None:
    """Without origins a preflight gets no CORS grant; with one it is granted, keyless."""
    with running(cors_app(())) as base_url:
        status, headers = preflight(base_url.removesuffix("/v1"))
    assert status != 200
    assert "access-control-allow-origin" not in {k.lower() for k in headers}
    with running(cors_app(("https://app.test",))) as base_url:
        url = base_url.removesuffix("/v1")
        status, headers = preflight(url)
        lowered = {k.lower(): v for k, v in headers.items()}
        assert status == 200
        assert lowered["access-control-allow-origin"] == "https://app.test"
        assert "authorization" in lowered["access-control-allow-headers"].lower()
        request = urllib.request.Request(
            f"{url}/v1/models",
            headers={"origin": "https://app.test", "authorization": f"Bearer {ACME}"},
        )
        with urllib.request.urlopen(request) as reply:
            assert reply.headers["access-control-allow-origin"] == "https://app.test"
