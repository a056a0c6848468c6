"""Result.mismatch_map: where the wrong entries of a 1-D or 2-D argument lie."""

from __future__ import annotations

import torch

import gradverify
from gradverify.examples.activations import ClippedReLU
from gradverify.examples.buggy import ClippedReLUForgotMask
from gradverify.numerics.maps import MAX_COLUMNS, MAX_ROWS
from gradverify.results import Result, Status

CLIP = 1.0  # ClippedReLUForgotMask's gradient is wrong exactly where x > CLIP


def values(shape: tuple[int, ...]) -> torch.Tensor:
    """Values in (-2, 3) that stay away from the kinks at 0 and CLIP, in a scrambled order."""
    count = torch.Size(shape).numel()
    grid = torch.linspace(-1.95, 2.95, count, dtype=torch.float64)
    grid = torch.where((grid - CLIP).abs() < 0.02, grid + 0.05, grid)
    grid = torch.where(grid.abs() < 0.02, grid + 0.05, grid)
    order = torch.randperm(count, generator=torch.Generator().manual_seed(7))
    return grid[order].reshape(shape).requires_grad_()


def expected_map(x: torch.Tensor) -> tuple[str, ...]:
    wrong = (x.detach() > CLIP).reshape(1, -1) if x.dim() == 1 else x.detach() > CLIP
    return tuple("".join("x" if cell else "." for cell in row) for row in wrong.tolist())


def failures(fn: type, x: torch.Tensor, **spec: object) -> list[Result]:
    checks = ["finite_difference", "gradcheck"]
    report = gradverify.verify(fn, [x, CLIP], checks=checks, **spec)
    return [result for result in report.results if result.status is Status.FAIL]


def test_a_mask_bug_in_a_1d_argument_is_mapped_exactly_where_x_exceeds_the_clip() -> None:
    x = values((17,))
    found = failures(ClippedReLUForgotMask, x)
    assert [result.check for result in found] == ["finite_difference", "gradcheck"]
    for result in found:
        assert result.mismatch_map == expected_map(x)
        assert len(result.mismatch_map) == 1 and "x" in result.mismatch_map[0]


def test_a_mask_bug_in_a_2d_argument_is_mapped_row_by_row() -> None:
    x = values((5, 7))
    (finite_difference, gradcheck) = failures(ClippedReLUForgotMask, x)
    assert finite_difference.mismatch_map == gradcheck.mismatch_map == expected_map(x)
    assert len(finite_difference.mismatch_map) == 5
    marked = sum(row.count("x") for row in finite_difference.mismatch_map)
    assert marked == finite_difference.mismatched == int((x > CLIP).sum())


def test_a_correct_function_has_no_map() -> None:
    report = gradverify.verify(ClippedReLU, [values((5, 7)), CLIP])
    assert report.passed
    assert all(result.mismatch_map is None for result in report.results)


def test_no_map_for_a_3d_argument_a_scalar_or_an_oversized_one() -> None:
    scalar = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    for x in [values((2, 3, 4)), scalar, values((MAX_COLUMNS + 1,)), values((MAX_ROWS + 1, 2))]:
        shape = tuple(x.shape)
        found = failures(ClippedReLUForgotMask, x, mode="full")
        assert found, shape  # the bug is found all the same...
        assert all(result.mismatch_map is None for result in found), shape  # ...without a map


def test_the_largest_map_kept_is_at_the_cap() -> None:
    x = values((2, MAX_COLUMNS))
    (finite_difference, _) = failures(ClippedReLUForgotMask, x, mode="full")
    assert finite_difference.mismatch_map == expected_map(x)


def test_randomized_mode_maps_the_localized_elements_and_leaves_the_rest_unexamined() -> None:
    x = values((12, 30))
    found = failures(ClippedReLUForgotMask, x, mode="randomized")
    assert found
    for result in found:
        rows = result.mismatch_map
        assert rows is not None and len(rows) == 12 and {len(row) for row in rows} == {30}
        wrong = {(i, j) for i, row in enumerate(rows) for j, cell in enumerate(row) if cell == "x"}
        assert len(wrong) == result.mismatched
        assert result.element is not None and tuple(result.element) in wrong
        assert all(x[i, j] > CLIP for i, j in wrong)  # never where the gradient is right
        assert sum(row.count(" ") for row in rows) > 300  # most elements not examined one by one


def test_the_map_is_in_the_json_form() -> None:
    x = values((3, 4))
    (result, _) = failures(ClippedReLUForgotMask, x)
    assert result.to_dict()["mismatch_map"] == list(expected_map(x))
