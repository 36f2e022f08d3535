"""`OpenAIResponsesModel`: fncore's `Model` over the Responses API."""

from __future__ import annotations

from typing import Any, final

from openai import AsyncOpenAI, AsyncStream
from openai.types.responses import ResponseStreamEvent

from fncore.adapter import ApiKey, ModelError, ModelRequest, ModelResponse
from fncore_openai._base import OpenAIModelBase
from fncore_openai._responses_decode import ResponsesStreamDecoder, decode_response
from fncore_openai._responses_request import responses_arguments


@final
class OpenAIResponsesModel(OpenAIModelBase[ResponseStreamEvent]):
    """A model behind the OpenAI Responses API (``/v1/responses``).

    Stateless by default (``store=False``): every request carries the whole conversation,
    and reasoning comes back encrypted (``include=["reasoning.encrypted_content"]``) in
    `ReasoningPart.signature`, to be sent back with the next request.

    Example:
        >>> model = OpenAIResponsesModel("o4-mini", api_key="sk-test")
        >>> model.name
        'o4-mini'
    """

    __slots__ = ("_max_tokens", "_store")

    def __init__(
        self,
        model: str,
        *,
        client: AsyncOpenAI | None = None,
        api_key: ApiKey = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        store: bool = False,
        max_tokens: int | None = None,
    ) -> None:
        """Create the model; without ``client``, build one from the other arguments.

        Args:
            model: The model name (``gpt-4.1``, ``o4-mini``).
            client: An ``AsyncOpenAI`` client to use as it is (the next four arguments are
                then ignored).
            api_key: The API key, as text or a `pydantic.SecretStr`; ``None`` reads
                ``OPENAI_API_KEY``. It is unwrapped only to build the client.
            base_url: The API root, ending in ``/v1``; ``None`` means OpenAI.
            timeout: Seconds to wait for an answer.
            max_retries: The SDK's own retries of failed connections, 408, 409, 429 and 5xx
                answers (it honours ``retry-after``).
            store: Whether OpenAI keeps the responses (``store``); the conversation is sent
                whole either way.
            max_tokens: The token cap (``max_output_tokens``) when a request's settings
                give none.

        Raises:
            ValueError: if no client is given and no API key is given or set.
        """
        super().__init__(
            model,
            client=client,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )
        self._store = store
        self._max_tokens = max_tokens

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        return responses_arguments(
            request,
            model=self._model,
            store=self._store,
            default_max_tokens=self._max_tokens,
            create=self._client.responses.create,
        )

    async def _answer(self, arguments: dict[str, Any]) -> ModelResponse | ModelError:
        raw = await self._client.responses.with_raw_response.create(**arguments)
        try:
            return decode_response(raw.parse(), self._model, self._endpoint)
        except Exception as exc:  # not JSON, or not a Responses answer
            return self._endpoint.unexpected(raw.status_code, raw.content, exc)

    async def _open_stream(self, arguments: dict[str, Any]) -> AsyncStream[ResponseStreamEvent]:
        events: AsyncStream[ResponseStreamEvent] = await self._client.responses.create(
            **arguments, stream=True
        )
        return events

    def _decoder(self) -> ResponsesStreamDecoder:
        return ResponsesStreamDecoder(self._model, self._endpoint)
