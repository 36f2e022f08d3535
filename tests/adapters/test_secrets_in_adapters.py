"""Secrets never shown: keys and URL credentials stay out of reprs, strs and error values.

Every adapter takes its key as text or as a `pydantic.SecretStr` (what the container
passes) and unwraps it only to build the SDK client; a base URL is shown with its user
info and secret-looking query values redacted, in reprs and in error messages alike.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapters_common import API_PARAMS, KEY, REQUEST, TEXT, Api, clean, failure, models_fixture, on  # noqa: F401
from fake_provider import FakeProvider, Reply, free_port
from pydantic import SecretStr

from fncore.adapter import ConnectionFailed, ModelTimeout, ProviderModel

PASSWORD = "pw-SECRET-4242"
TOKEN = "tok-SECRET-9898"
SECRETS = (KEY, PASSWORD, TOKEN)


def with_credentials(root: str) -> str:
    """``root`` (``http://host:port``) with a user, a password and a token query parameter."""
    return root.replace("http://", f"http://bot:{PASSWORD}@") + f"?region=eu&api_key={TOKEN}"


def shows_none(*texts: str) -> None:
    """No secret appears in any of ``texts``."""
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, text


@pytest.mark.parametrize("key", [KEY, SecretStr(KEY)], ids=["text", "secretstr"])
@pytest.mark.parametrize("api", API_PARAMS)
def test_repr_and_str_show_no_secret(
    models: list[ProviderModel[Any, Any]], api: Api, key: str | SecretStr
) -> None:
    """A model built with a key and a URL with credentials shows neither."""
    model = on(api, with_credentials("http://127.0.0.1:9"), models, api_key=key)
    shows_none(repr(model), str(model), repr(model.endpoint), str(model.endpoint))
    assert "[redacted]@127.0.0.1:9" in repr(model)
    assert "region=eu" in repr(model)
    assert model.name in repr(model)


@pytest.mark.parametrize("api", API_PARAMS)
async def test_from_config_takes_a_secretstr(
    fake_provider: FakeProvider, models: list[ProviderModel[Any, Any]], api: Api
) -> None:
    """The container's SecretStr reaches the SDK client as text, and the server gets it."""
    section = {
        "kind": api.name,
        "name": "m",
        "api_key": SecretStr(KEY),
        "base_url": fake_provider.url + api.suffix,
        "max_retries": 0,
    }
    model = api.from_config(section)
    models.append(model)
    shows_none(repr(model), str(model))
    fake_provider.reply(api.answer())
    assert (await model.request(REQUEST)).unwrap().text == TEXT
    sent = " ".join(fake_provider.requests[-1].headers.values())
    assert KEY in sent  # the key went out, unwrapped, in the authentication header


@pytest.mark.parametrize("streamed", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("api", API_PARAMS)
async def test_connection_failed_shows_the_url_redacted(
    models: list[ProviderModel[Any, Any]], api: Api, streamed: bool
) -> None:
    """ConnectionFailed names the base URL, credentials redacted."""
    url = with_credentials(f"http://127.0.0.1:{free_port()}")
    error = clean(await failure(on(api, url, models), streamed), api.provider)
    assert isinstance(error, ConnectionFailed)
    shows_none(error.message, str(error), repr(error))
    assert "[redacted]@127.0.0.1" in error.message
    assert "api_key=[redacted]" in error.message


@pytest.mark.parametrize("api", API_PARAMS)
async def test_timeout_shows_the_url_redacted(
    models: list[ProviderModel[Any, Any]], api: Api, silent_server: str
) -> None:
    """ModelTimeout names the limit and the redacted URL."""
    model = on(api, with_credentials(silent_server), models, timeout=0.2)
    error = clean(await failure(model, False), api.provider)
    assert isinstance(error, ModelTimeout)
    shows_none(error.message, repr(error))
    assert "within 0.2s" in error.message
    assert "[redacted]@127.0.0.1" in error.message


@pytest.mark.parametrize("streamed", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("api", API_PARAMS)
async def test_a_provider_message_quoting_credentials_is_redacted(
    fake_provider: FakeProvider, models: list[ProviderModel[Any, Any]], api: Api, streamed: bool
) -> None:
    """An error body echoing the key or the URL's password and token has them redacted."""
    echo = f"bad credentials: key {KEY}, password {PASSWORD}, token {TOKEN}"
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": echo}}
    fake_provider.reply(Reply(400, body))
    model = on(api, with_credentials(fake_provider.url), models)
    error = clean(await failure(model, streamed), api.provider)
    shows_none(error.message, str(error), repr(error))
    assert "bad credentials: key [redacted], password [redacted], token [redacted]" in (
        error.message
    )
