"""Anthropic Messages adapter for fncore: `AnthropicModel` over the ``anthropic`` SDK.

Example:
    >>> from fncore_anthropic import AnthropicModel
    >>> AnthropicModel("claude-x", api_key="sk-ant-1", base_url="http://127.0.0.1:9").name
    'claude-x'
"""

from fncore_anthropic._client import from_config
from fncore_anthropic._model import AnthropicModel

__all__ = ["AnthropicModel", "from_config"]
