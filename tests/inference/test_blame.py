"""The reason inference stopped blames what forward blamed: "forward rejected every shape" only
where its complaint was about shapes (gradverify.inference.blame)."""

from __future__ import annotations

import pytest

from gradverify.inference.blame import rejected_every
from tests.inference import runs

MODULE = "tests.functions.blame"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("ScaleFromContext", "forward raised on every input tried for x (AttributeError"),
        ("LogAboveOne", "forward rejected every value tried for x (ValueError: x must be > 1)"),
        ("Int8Only", "forward rejected every dtype tried for x (TypeError: expected dtype"),
    ],
)
def test_a_rejection_not_about_shapes_names_what_it_is_about(name: str, said: str) -> None:
    stopped = runs.inferred(f"{MODULE}:{name}").stopped

    assert stopped is not None and stopped.startswith(said)


def test_a_rejection_about_shapes_still_says_shapes() -> None:
    stopped = runs.inferred("tests.functions.inference:FixedShape").stopped

    assert (
        stopped
        == "forward rejected every shape tried for x (ValueError: x must be [5, 7], got [4])"
    )


@pytest.mark.parametrize(
    ("complaint", "blamed"),
    [
        ("RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x3)", "shape"),
        ("RuntimeError: The size of tensor a (4) must match the size of tensor b (3)", "shape"),
        ("ValueError: x must be 5x7", "shape"),
        ("RuntimeError: expected scalar type Float but found Double", "dtype"),
        ("ValueError: alpha must be greater than 1", "value"),
        ("NameError: name 'scale' is not defined", "input"),
    ],
)
def test_complaints_are_blamed_on_what_they_name(complaint: str, blamed: str) -> None:
    assert rejected_every(complaint).split()[-2] == blamed
