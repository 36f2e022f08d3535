"""Offline models: real `Model` implementations for tests and demos, streaming included."""

from fncore._public import publish
from fncore.testing._common import deltas
from fncore.testing._function_model import (
    FunctionModel,
    ModelFunction,
    Reply,
    ScriptedModel,
    tool_calls,
)
from fncore.testing._test_model import TestModel

__all__ = [
    "FunctionModel",
    "ModelFunction",
    "Reply",
    "ScriptedModel",
    "TestModel",
    "deltas",
    "tool_calls",
]

publish(__name__, globals(), __all__)
