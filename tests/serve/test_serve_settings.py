"""`ServeSettings` refuses limits that could not work."""

import pytest

from fncore.serve import ServeSettings


@pytest.mark.parametrize("field", ["max_body_bytes", "max_messages", "runs_kept"])
@pytest.mark.parametrize("value", [0, -1, True, 2.5])
def test_limits_are_positive_ints(field: str, value: object) -> None:
    """A limit that is not a positive int is refused, naming the field."""
    with pytest.raises(ValueError, match=rf"ServeSettings\.{field} must be a positive int"):
        ServeSettings(**{field: value})  # type: ignore[arg-type]


def test_the_model_name_is_not_empty() -> None:
    """Clients need an id to send."""
    with pytest.raises(ValueError, match="model_name must not be empty"):
        ServeSettings(model_name="")
