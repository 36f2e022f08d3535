"""An agent's checkpoint settings are checked when it is built."""

from __future__ import annotations

import pytest

from fncore import Agent, Registry
from fncore.testing import TestModel


@pytest.mark.parametrize("setting", ["checkpoint_ttl", "resume_lease"])
@pytest.mark.parametrize("seconds", [0, -1.0, float("nan"), float("inf"), "60"])
def test_a_time_that_is_not_positive_and_finite_is_refused(setting: str, seconds: object) -> None:
    """A lease of 0 would renew in a busy loop, a negative one would free the claim at once."""
    with pytest.raises(ValueError, match=f"^{setting} must be a positive, finite number"):
        Agent(TestModel(), registry=Registry(), **{setting: seconds})  # type: ignore[arg-type]


def test_positive_times_are_taken() -> None:
    """Any positive, finite number of seconds will do."""
    Agent(TestModel(), registry=Registry(), checkpoint_ttl=0.5, resume_lease=3)
