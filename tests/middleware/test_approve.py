"""``approve``: what a pending request says."""

from __future__ import annotations

from fncore import Agent, Approve, Registry, ToolCallContext
from fncore.middleware import approve
from fncore.testing import ScriptedModel, tool_calls


def delete_file(path: str) -> str:
    """Delete a file."""
    return f"Deleted {path}."


async def test_a_description_function_is_given_the_calls_context() -> None:
    """``description`` as a function of the context writes the request's text."""

    def asks(ctx: ToolCallContext) -> str:
        return f"Delete {ctx.arg('path', str)} for good?"

    registry = Registry()
    registry.include(approve(description=asks))
    model = ScriptedModel([tool_calls(("delete_file", {"path": "a.txt"})), "Done."])
    agent = Agent(model, registry=registry, tools=[delete_file])
    paused = (await agent.run("Clean up.")).unwrap().paused
    assert paused is not None
    assert [r.description for r in paused.requests] == ["Delete a.txt for good?"]
    resumed = (await agent.resume(paused.checkpoint_id, Approve())).unwrap()
    assert resumed.output == "Done."
