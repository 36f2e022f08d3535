"""OpenAI adapter for fncore: Chat Completions and Responses models over the ``openai`` SDK.

``OpenAIChatModel`` speaks Chat Completions (OpenAI and compatible servers such as vLLM,
Ollama and LM Studio, through ``base_url``); ``OpenAIResponsesModel`` speaks the Responses
API. The container builds them from configuration with ``model.kind = "openai"`` or
``"openai-responses"``.
"""

from fncore_openai._chat_model import OpenAIChatModel
from fncore_openai._config import chat_model_from_config, responses_model_from_config
from fncore_openai._responses_model import OpenAIResponsesModel

__all__ = [
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "chat_model_from_config",
    "responses_model_from_config",
]
