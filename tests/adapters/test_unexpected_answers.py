"""A 2xx answer whose body is not the API's is an UnexpectedResponse, for every adapter.

Chat Completions, Responses and Anthropic Messages, through their real SDKs: an HTML page
(as JSON or as text/html), ``{}``, an error object sent with status 200, other JSON that is
not an answer, an empty body. None of them may pass for an empty answer (which would be
saved to a session); each error carries the status and the start of the body, never the key.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapters_common import API_PARAMS, KEY, REQUEST, TEXT, Api, clean, models_fixture, on  # noqa: F401
from fake_provider import FakeProvider, Reply
from returns.result import Failure, Success

from fncore.adapter import ModelResponse, ProviderModel, UnexpectedResponse

HTML = f"<!doctype html>\n<html><head><title>Sign in</title></head><body>{KEY}</body></html>"

ERROR_OBJECT = {"error": {"message": "quota exceeded", "type": "insufficient_quota"}}
ANTHROPIC_ERROR = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}

BODIES = [
    pytest.param(Reply(body=HTML.encode()), "'<!doctype html> <html><head>", id="html-as-json"),
    pytest.param(Reply(body=HTML.encode(), content_type="text/html"), "<title>", id="html"),
    pytest.param(Reply(body={}), "'{}'", id="empty-object"),
    pytest.param(Reply(body=ERROR_OBJECT), "quota exceeded", id="error-object"),
    pytest.param(Reply(body=ANTHROPIC_ERROR), "overloaded_error", id="anthropic-error-object"),
    pytest.param(Reply(body=[]), "'[]'", id="list"),
    pytest.param(Reply(body="ok"), """'"ok"'""", id="string"),
    pytest.param(Reply(body=None), "'null'", id="null"),
    pytest.param(Reply(body=b""), "an empty body", id="empty-body"),
    pytest.param(Reply(201, {"object": "thing"}), """'{"object": "thing"}'""", id="201-other"),
]


@pytest.mark.parametrize(("reply", "quoted"), BODIES)
@pytest.mark.parametrize("api", API_PARAMS)
async def test_a_body_that_is_not_the_api_is_rejected(
    fake_provider: FakeProvider,
    models: list[ProviderModel[Any, Any]],
    api: Api,
    reply: Reply,
    quoted: str,
) -> None:
    """The answer is an UnexpectedResponse with the status and an excerpt, not a success."""
    fake_provider.reply(reply)
    result = await on(api, fake_provider, models).request(REQUEST)
    assert isinstance(result, Failure), result
    error = clean(result.failure(), api.provider)
    assert isinstance(error, UnexpectedResponse)
    assert error.status == reply.status
    assert not error.retryable
    assert f"answered {reply.status} with a body that is not its API's answer" in error.message
    assert quoted in error.message
    assert "model.base_url" in error.message


@pytest.mark.parametrize("api", API_PARAMS)
async def test_the_key_in_a_long_body_is_not_half_quoted(
    fake_provider: FakeProvider, models: list[ProviderModel[Any, Any]], api: Api
) -> None:
    """The excerpt is cut after redaction: a key at the cut leaves no prefix behind."""
    fake_provider.reply(Reply(body=("<p>" + "x" * 150 + KEY + "</p>").encode()))
    result = await on(api, fake_provider, models).request(REQUEST)
    assert isinstance(result, Failure)
    error = clean(result.failure(), api.provider)
    assert KEY[:6] not in error.message


@pytest.mark.parametrize("api", API_PARAMS)
async def test_a_good_answer_still_decodes(
    fake_provider: FakeProvider, models: list[ProviderModel[Any, Any]], api: Api
) -> None:
    """The check lets the API's own answers through, with their text."""
    fake_provider.reply(api.answer())
    result = await on(api, fake_provider, models).request(REQUEST)
    assert isinstance(result, Success), result
    response = result.unwrap()
    assert isinstance(response, ModelResponse)
    assert response.text == TEXT
