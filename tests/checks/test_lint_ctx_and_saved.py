"""GV101 only for inputs and outputs kept on ctx; GV106 for an in-place change, in forward,
to a tensor already given to save_for_backward."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gradverify.catalogue import LINT_RULES as RULES
from tests.functions import forms

ROOT = Path(__file__).resolve().parents[2]
FORMS_FILE = ROOT / "tests" / "functions" / "forms.py"


def line_after(class_name: str, marker: str) -> int:
    lines = FORMS_FILE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"class {class_name}("))
    return next(i + 1 for i in range(start, len(lines)) if marker in lines[i])


def lint(run_spec, name, shape=(4,)):
    report = run_spec(
        f"""
        target: tests.functions.forms:{name}
        checks: [lint]
        cases: [{{name: case, inputs: [{{shape: {list(shape)}}}]}}]
        """
    )
    return [r for r in report.results if r.check == "lint"]


@pytest.mark.parametrize(
    "name", ["ReLUMaskOnCtx", "TanhDetachedIntermediateOnCtx", "MaskOnCtxNewStyle"]
)
def test_a_mask_or_a_detached_intermediate_on_ctx_is_fine(run_spec, name):
    results = lint(run_spec, name)
    assert [(r.status.value, r.rule) for r in results] == [("pass", None)]


@pytest.mark.parametrize(
    ("name", "shape", "relation"),
    [
        ("ExpOutputOnCtx", (4,), "which is output 0"),
        ("ExpDetachedOutputOnCtx", (4,), "which shares memory with output 0"),
        ("RowOfInputOnCtx", (3, 4), "which shares memory with argument 0 (x)"),
    ],
)
def test_an_input_or_output_on_ctx_is_gv101_naming_which(run_spec, name, shape, relation):
    (result,) = lint(run_spec, name, shape)
    assert (result.rule, result.status.value) == ("GV101", "warn")
    assert relation in result.message
    assert result.source_line == line_after(name, "# pitfall: GV101")


def test_an_input_itself_on_ctx_is_still_gv101(run_spec):
    report = run_spec(
        """
        target: tests.functions.pitfalls:CtxTensorAttribute
        checks: [lint]
        cases: [{name: case, inputs: [{shape: [4]}, 2.0]}]
        """
    )
    (result,) = report.results
    assert result.rule == "GV101"
    assert "which is argument 0 (x)" in result.message


@pytest.mark.parametrize(
    ("name", "code", "tensor"),
    [
        ("ExpSavedThenShifted", "y.add_(1)", "y"),
        ("SquareSavedThenDirty", "x.mul_(x)", "x"),
        ("ExpSavedThenScaledUnderNoGrad", "flat[0] = 0.0", "y"),
        ("ExpSavedOutputThenShiftedNewStyle", "output.data.add_(1)", "output"),
    ],
)
def test_an_in_place_change_after_saving_is_gv106_at_its_line(run_spec, name, code, tensor):
    (result,) = [r for r in lint(run_spec, name) if r.rule == "GV106"]
    assert result.status.value == "warn"
    assert result.source_line == line_after(name, "# pitfall: GV106")
    assert Path(result.source_file).resolve() == FORMS_FILE
    assert f"`{code}`" in result.message
    assert f"modifies {tensor} in place after ctx.save_for_backward saved it" in result.message
    assert result.hint == RULES["GV106"][1]


@pytest.mark.parametrize("name", ["ExpShiftedBeforeSaving", "ExpInPlace", "ScaledAddInPlace"])
def test_a_change_before_saving_or_to_a_clone_is_not_gv106(run_spec, name):
    report = run_spec(
        f"""
        target: tests.functions.forms:{name}
        checks: [lint]
        cases: [{{name: case, inputs: [{{shape: [4]}}, {{shape: [4]}}, 0.5]}}]
        """
        if name == "ScaledAddInPlace"
        else f"""
        target: tests.functions.forms:{name}
        checks: [lint]
        cases: [{{name: case, inputs: [{{shape: [4]}}]}}]
        """
    )
    assert [(r.status.value, r.rule) for r in report.results] == [("pass", None)]


@pytest.mark.parametrize(
    "function",
    [
        forms.ExpSavedThenShifted,
        forms.SquareSavedThenDirty,
        forms.ExpSavedThenScaledUnderNoGrad,
        forms.ExpSavedOutputThenShiftedNewStyle,
    ],
)
def test_torch_silently_gives_a_wrong_gradient_for_each_gv106_case(function):
    # The premise of the rule: no error from torch, and a gradient that is not the derivative.
    x = torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64, requires_grad=True)
    (analytical,) = torch.autograd.grad(function.apply(x.clone()).sum(), x)
    with torch.no_grad():
        step = 1e-6
        numerical = torch.stack(
            [
                (function.apply(x + step * e).sum() - function.apply(x - step * e).sum())
                / (2 * step)
                for e in torch.eye(3, dtype=torch.float64)
            ]
        )
    assert not torch.allclose(analytical, numerical, atol=1e-4)


def test_explain_gv106(in_repo):
    from typer.testing import CliRunner

    from gradverify.cli import app

    result = CliRunner().invoke(app, ["explain", "GV106"])
    assert result.exit_code == 0, result.output
    assert RULES["GV106"][0] in result.stdout
