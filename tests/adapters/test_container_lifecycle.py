"""The container owns the provider models it builds: shared by its agents, closed by it."""

from __future__ import annotations

from fake_provider import FakeProvider, Reply

from fncore import Registry, load_container


def text_completion(text: str) -> Reply:
    """A Chat Completions answer holding ``text``."""
    return Reply(
        body={
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
    )


def openai_container(fake: FakeProvider):  # type: ignore[no-untyped-def]
    """A container whose model is the OpenAI Chat adapter on the fake server."""
    return load_container(
        overrides={
            "model": {
                "kind": "openai",
                "name": "gpt-test",
                "base_url": f"{fake.url}/v1",
                "api_key": "sk-test-key-0123456789",
                "max_retries": 0,
            }
        },
        environ={},
    )


async def test_closing_one_agent_never_breaks_another(fake_provider: FakeProvider) -> None:
    """Two agents share the container's model; closing one leaves the other working."""
    container = openai_container(fake_provider)
    first = container.agent(registry=Registry())
    second = container.agent(registry=Registry())
    assert first.model is second.model
    fake_provider.reply(text_completion("one"), text_completion("two"))
    assert (await first.run("hi")).unwrap().output == "one"
    await first.aclose()
    assert (await second.run("hi")).unwrap().output == "two"
    await container.shutdown()


async def test_shutdown_closes_the_models_it_built_and_builds_afresh(
    fake_provider: FakeProvider,
) -> None:
    """shutdown() closes the model's client; the next use builds a new model."""
    async with openai_container(fake_provider) as container:
        model = container.model()
        fake_provider.reply(text_completion("before"))
        assert (await container.agent(registry=Registry()).run("hi")).unwrap().output == "before"
    assert model.client.is_closed()  # type: ignore[attr-defined]
    fresh = container.model()
    assert fresh is not model
    fake_provider.reply(text_completion("after"))
    assert (await container.agent(registry=Registry()).run("hi")).unwrap().output == "after"
    await container.shutdown()
    assert fresh.client.is_closed()  # type: ignore[attr-defined]


async def test_the_api_key_reaches_the_provider_and_nothing_else(
    fake_provider: FakeProvider,
) -> None:
    """The configured key is sent as the bearer token, and shown nowhere in the container."""
    container = openai_container(fake_provider)
    fake_provider.reply(text_completion("ok"))
    await container.agent(registry=Registry()).run("hi")
    headers = {k.lower(): v for k, v in fake_provider.requests[-1].headers.items()}
    sent = headers.get("authorization")
    assert sent == "Bearer sk-test-key-0123456789"
    assert "sk-test-key" not in repr(container.config())
    await container.shutdown()
