"""What a checkpoint must match to be resumed, and what a store says of a change to one."""

from __future__ import annotations

import pytest

from fncore.core import ChangeResult
from fncore.core._checkpoint import config_hash
from fncore.core._loop import LoopSettings


def test_the_config_hash_is_stable_and_short() -> None:
    """The same stack and settings give the same 32 hex digits, in any process."""
    first = config_hash("run: trace", "Be brief.", LoopSettings(), None)
    assert first == config_hash("run: trace", "Be brief.", LoopSettings(), None)
    assert len(first) == 32
    assert int(first, 16) >= 0


@pytest.mark.parametrize(
    ("stack", "instructions", "settings", "output"),
    [
        ("run: other", "Be brief.", LoopSettings(), None),
        ("run: trace", "Be long.", LoopSettings(), None),
        ("run: trace", "Be brief.", LoopSettings(max_iterations=2), None),
        ("run: trace", "Be brief.", LoopSettings(), "OutputSpec(int)"),
    ],
    ids=["stack", "instructions", "settings", "output"],
)
def test_any_difference_changes_the_config_hash(
    stack: str, instructions: str, settings: LoopSettings, output: object
) -> None:
    """A checkpoint of another stack, prompt, loop or output type does not match."""
    base = config_hash("run: trace", "Be brief.", LoopSettings(), None)
    assert config_hash(stack, instructions, settings, output) != base


def test_change_results_are_an_enum_equal_to_their_old_strings() -> None:
    """Three members; each compares equal to the string a store used to return."""
    assert list(ChangeResult) == [ChangeResult.OK, ChangeResult.LOST, ChangeResult.CONFLICT]
    assert [member == member.name.lower() for member in ChangeResult] == [True, True, True]
