"""``[[middleware]]`` parameters are checked against Annotated constraints (ranges) too."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field

from fncore import ConfigError, Registry, load_container


def bounded(
    times: Annotated[int, Field(ge=1, le=5)] = 1,
    seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = 1.0,
) -> Registry:
    """A factory whose parameters have ranges, as the built-ins' do."""
    return Registry()


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"times": 0}, "parameter 'times': Input should be greater than or equal to 1"),
        ({"times": 6}, "parameter 'times': Input should be less than or equal to 5"),
        ({"seconds": 0}, "parameter 'seconds':"),
        ({"seconds": float("inf")}, "parameter 'seconds':"),
    ],
)
def test_a_value_out_of_its_range_is_a_one_line_config_error(
    params: dict[str, Any], words: str
) -> None:
    """Field(ge=..., gt=...) in an Annotated parameter is enforced, not only its type."""
    entry = {"use": "test_config_annotated:bounded", **params}
    with pytest.raises(ConfigError) as info:
        load_container(overrides={"middleware": [entry]}, environ={}).agent()
    assert "\n" not in str(info.value)
    assert words in str(info.value)


def test_values_in_range_and_none_pass() -> None:
    """The bounds still let good values (and None where allowed) through."""
    entry = {"use": "test_config_annotated:bounded", "times": 5, "seconds": None}
    load_container(overrides={"middleware": [entry]}, environ={}).agent()
