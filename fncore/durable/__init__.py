"""Durable runs on DBOS Transact: runs that survive a crash, step by step, and spread over workers.

Needs the ``durable`` extra: ``pip install "fncore-agents[durable]"`` (``dbos``). Each pass
through a run's ``model_call`` onion, and each tool call's pass through ``tool_call``, is a
step whose result DBOS records; a run recovered after a crash replays the recorded steps
and goes on from the first one that had not completed. See "Durable execution" in the docs.
"""

from fncore import _public
from fncore.durable._client import DurableClient as DurableClient
from fncore.durable._engine import DurableRun as DurableRun
from fncore.durable._engine import DurableRuntime as DurableRuntime
from fncore.durable._errors import DurableError as DurableError
from fncore.durable._errors import DurableUnavailable as DurableUnavailable
from fncore.durable._errors import DurableUnavailableError as DurableUnavailableError
from fncore.durable._errors import StackChanged as StackChanged
from fncore.durable._errors import UnknownAgent as UnknownAgent
from fncore.durable._errors import UnknownRun as UnknownRun
from fncore.durable._runs import DurableRunInfo as DurableRunInfo
from fncore.durable._runs import StepRecord as StepRecord
from fncore.settings import DurableSettings as DurableSettings

_public.export(__name__)
