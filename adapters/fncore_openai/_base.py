"""What both OpenAI models share: the client, its endpoint and the error mapping."""

from __future__ import annotations

from typing import TypeVar

from openai import AsyncOpenAI

from fncore.adapter import ApiKey, ProviderModel
from fncore_openai._client import build_client, endpoint_of
from fncore_openai._errors import map_exception

_Event = TypeVar("_Event")


class OpenAIModelBase(ProviderModel[AsyncOpenAI, _Event]):
    """The connection half of an OpenAI model; subclasses add an API's requests."""

    __slots__ = ()

    native_output = True
    """Requests' `OutputSchema` goes as the API's JSON-schema format (native structured
    output)."""

    def __init__(
        self,
        model: str,
        *,
        client: AsyncOpenAI | None,
        api_key: ApiKey,
        base_url: str | None,
        timeout: float,
        max_retries: int,
    ) -> None:
        owns_client = client is None
        if client is None:
            client = build_client(
                api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
            )
        super().__init__(model, client, endpoint_of(client), map_exception, owns_client=owns_client)
