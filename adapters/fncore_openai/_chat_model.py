"""`OpenAIChatModel`: fncore's `Model` over the Chat Completions API."""

from __future__ import annotations

from typing import Any, final

from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletionChunk

from fncore.adapter import ApiKey, ModelError, ModelRequest, ModelResponse
from fncore_openai._base import OpenAIModelBase
from fncore_openai._chat_decode import ChatStreamDecoder, decode_completion
from fncore_openai._chat_request import MaxTokensParam, SystemRole, chat_arguments


@final
class OpenAIChatModel(OpenAIModelBase[ChatCompletionChunk]):
    """A chat model behind the OpenAI Chat Completions API (``/v1/chat/completions``).

    Works with OpenAI and with OpenAI-compatible servers (vLLM, Ollama, LM Studio, ...)
    through ``base_url``. Failures come back as `ModelError` values, never as exceptions.

    Example:
        >>> model = OpenAIChatModel("gpt-4.1-mini", api_key="sk-test")
        >>> model.name
        'gpt-4.1-mini'
    """

    __slots__ = ("_max_tokens", "_max_tokens_param", "_system_role")

    def __init__(
        self,
        model: str,
        *,
        client: AsyncOpenAI | None = None,
        api_key: ApiKey = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        system_role: SystemRole = "system",
        max_tokens_param: MaxTokensParam = "max_completion_tokens",
        max_tokens: int | None = None,
    ) -> None:
        """Create the model; without ``client``, build one from the other arguments.

        Args:
            model: The model name the server knows (``gpt-4.1``, ``llama3.1:8b``).
            client: An ``AsyncOpenAI`` client to use as it is (the next four arguments are
                then ignored).
            api_key: The API key, as text or a `pydantic.SecretStr`; ``None`` reads
                ``OPENAI_API_KEY``. It is unwrapped only to build the client.
            base_url: The API root, ending in ``/v1``; ``None`` means OpenAI.
            timeout: Seconds to wait for an answer.
            max_retries: The SDK's own retries of failed connections, 408, 409, 429 and 5xx
                answers (it honours ``retry-after``).
            system_role: The role that carries the instructions and system messages
                (``developer`` for OpenAI's reasoning models).
            max_tokens_param: The argument that carries the token cap; ``max_tokens`` for
                compatible servers that do not know ``max_completion_tokens``.
            max_tokens: The token cap when a request's settings give none.

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
        self._system_role: SystemRole = system_role
        self._max_tokens_param: MaxTokensParam = max_tokens_param
        self._max_tokens = max_tokens

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        return chat_arguments(
            request,
            model=self._model,
            system_role=self._system_role,
            max_tokens_param=self._max_tokens_param,
            default_max_tokens=self._max_tokens,
            create=self._client.chat.completions.create,
        )

    async def _answer(self, arguments: dict[str, Any]) -> ModelResponse | ModelError:
        raw = await self._client.chat.completions.with_raw_response.create(**arguments)
        try:
            return decode_completion(raw.parse(), self._model)
        except Exception as exc:  # not JSON, or not a chat completion
            return self._endpoint.unexpected(raw.status_code, raw.content, exc)

    async def _open_stream(self, arguments: dict[str, Any]) -> AsyncStream[ChatCompletionChunk]:
        arguments["stream_options"] = {"include_usage": True, **arguments.get("stream_options", {})}
        chunks: AsyncStream[ChatCompletionChunk] = await self._client.chat.completions.create(
            **arguments, stream=True
        )
        return chunks

    def _decoder(self) -> ChatStreamDecoder:
        return ChatStreamDecoder(self._model, self._endpoint)
