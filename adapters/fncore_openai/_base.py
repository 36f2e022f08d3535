"""What both OpenAI models share: the client, its secret, closing, and error mapping."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from openai import AsyncOpenAI

from fncore.core import ModelError, ModelRequest
from fncore_openai._client import build_client, client_secret
from fncore_openai._errors import NotExpressible, bad_request, map_exception


class OpenAIModelBase(ABC):
    """The connection half of an OpenAI model; subclasses add an API's requests."""

    __slots__ = ("_client", "_model", "_owns_client", "_secret")

    def __init__(
        self,
        model: str,
        *,
        client: AsyncOpenAI | None,
        api_key: str | None,
        base_url: str | None,
        timeout: float,
        max_retries: int,
    ) -> None:
        self._model = model
        self._owns_client = client is None
        self._client = client or build_client(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )
        self._secret = client_secret(self._client)

    async def aclose(self) -> None:
        """Close the HTTP connections of the client the model built (a given one is left open)."""
        if self._owns_client:
            await self._client.close()

    @property
    def name(self) -> str:
        """The model name requests are sent with."""
        return self._model

    @property
    def client(self) -> AsyncOpenAI:
        """The SDK client in use."""
        return self._client

    def _error(self, exc: Exception, *, in_stream: bool = False) -> ModelError:
        timeout = self._client.timeout
        return map_exception(
            exc,
            api_key=self._secret,
            base_url=str(self._client.base_url),
            timeout=timeout if isinstance(timeout, int | float) else None,
            in_stream=in_stream,
        )

    @abstractmethod
    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        """The SDK ``create`` arguments for ``request``; raises `NotExpressible` if it can't."""

    def _prepared(self, request: ModelRequest) -> dict[str, Any] | ModelError:
        """`_arguments`, or the error value for a request that cannot be sent."""
        try:
            return self._arguments(request)
        except NotExpressible as exc:
            return bad_request(str(exc), self._secret)
        except Exception as exc:
            return self._error(exc)
