"""The mismatch map in the text report: drawn in a failure's panel only where it fits."""

from __future__ import annotations

import pytest
import torch

import gradverify
from gradverify.examples.buggy import ClippedReLUForgotMask
from gradverify.report import RenderOptions, text
from gradverify.report.maps import text_map
from gradverify.results import Report, Result, Status

HEADING = "where the wrong entries lie"


def failure(rows: tuple[str, ...] | None) -> Result:
    return Result("pkg:Fn", "case", "finite_difference", Status.FAIL, "wrong", mismatch_map=rows)


@pytest.fixture(scope="module")
def mask_bug() -> Report:
    # 4 x 6 values from -2 to 3: the gradient is wrong where x > 1, rows 2 (from column 2) and 3.
    x = torch.linspace(-2, 3, 24, dtype=torch.float64).reshape(4, 6).requires_grad_()
    return gradverify.verify(ClippedReLUForgotMask, [x, 1.0], checks=["finite_difference"])


def cells(lines: list[str]) -> list[str]:
    """The rows of cells between the frame's sides."""
    return [line.split("│")[1] for line in lines if line.count("│") == 2]


def test_a_2d_map_is_framed_with_sparse_indices_and_a_legend() -> None:
    rows = tuple("....x" * 3 for _ in range(12))
    lines = text_map(failure(rows), 40)
    assert lines is not None
    assert cells(lines) == [row.replace(".", "·") for row in rows]
    assert lines[0].split() == ["0", "10"]  # column indices every ten columns
    labels = [line.split("│")[0].strip() for line in lines if line.count("│") == 2]
    assert labels == ["0", "", "", "", "", "5", "", "", "", "", "10", ""]  # every fifth row
    assert lines[-1] == "x wrong  · right"


def test_a_1d_map_is_one_row_without_row_indices() -> None:
    lines = text_map(failure(("..xx.",)), 40)
    assert lines is not None
    assert cells(lines) == ["··xx·"]
    assert lines[2].startswith("│")


def test_no_map_when_it_does_not_fit_is_too_tall_or_is_not_fully_examined() -> None:
    wide = failure(("x." * 20,))
    assert text_map(wide, 42) is not None
    assert text_map(wide, 41) is None  # 40 cells and two sides
    assert text_map(failure(tuple("x." for _ in range(33))), 100) is None
    assert text_map(failure((" x  ", "    ")), 100) is None  # randomized: a few points only
    assert text_map(failure(None), 100) is None


def test_the_panel_shows_the_mask_bug_where_x_exceeds_1(mask_bug: Report) -> None:
    rendered = text.render(mask_bug, RenderOptions(width=100))
    assert HEADING in rendered
    drawn = [line.strip(" │") for line in rendered.splitlines() if line.count("│") == 4]
    assert [row.split("│")[1] for row in drawn] == ["······", "······", "··xxxx", "xxxxxx"]


def test_the_panel_leaves_the_map_out_when_the_terminal_is_too_narrow(mask_bug: Report) -> None:
    rendered = text.render(mask_bug, RenderOptions(width=11))
    assert "wrong" in rendered and HEADING not in rendered and "┌" not in rendered
