"""The `layouts` check, and backward's handling of grad_outputs left undefined."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from gradverify.checks.layouts import non_contiguous

ROOT = Path(__file__).resolve().parents[2]
CORRECT_SPEC = ROOT / "tests" / "specs" / "checks" / "correct.yaml"
EXAMPLES_SPEC = ROOT / "specs" / "examples.yaml"
LAYOUTS_BUGGY_SPEC = ROOT / "specs" / "layouts_buggy.yaml"
LAYOUTS = "tests.functions.layouts"
FLATTEN_SCALE = "gradverify.examples.layouts:FlattenScale"
WASTED_WORK = "ctx.needs_input_grad"


def with_checks(spec: Path, checks: list[str]) -> str:
    """The spec file's text with every Function's `checks:` replaced by `checks`."""
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    for function in data["functions"]:
        function["checks"] = checks
    return yaml.safe_dump(data, sort_keys=False)


def layouts_spec(target: str, inputs: str, extra: str = "") -> str:
    return f"""
        target: {target}
        checks: [layouts]
        {extra}
        cases: [{{name: case, inputs: {inputs}}}]
        """


TWO_MATRICES = "[{shape: [3, 4]}, {shape: [3, 4]}]"


# Correct Functions: no false alarms.


@pytest.fixture(scope="module")
def correct_results(run_spec):
    # Other seeds are covered by test_no_false_alarms, which runs every check.
    reports = [run_spec(with_checks(spec, ["layouts"])) for spec in (CORRECT_SPEC, EXAMPLES_SPEC)]
    return [result for report in reports for result in report.results]


def test_every_correct_function_passes_every_variant(correct_results):
    cases = {(r.target, r.case) for r in correct_results}
    assert len(cases) >= 20
    for target, case in cases:
        results = [r for r in correct_results if (r.target, r.case) == (target, case)]
        passed = [r for r in results if r.status.value == "pass"]
        assert len(passed) == 1, (target, case, results)
        assert "variant" in passed[0].message
        # The only other finding allowed is the informational one about wasted work.
        others = [r for r in results if r.status.value != "pass"]
        assert all(r.status.value == "warn" and WASTED_WORK in r.message for r in others), others


def test_linear_respects_needs_input_grad_so_nothing_is_wasted(correct_results):
    linear = [r for r in correct_results if r.target == "gradverify.examples.linear:Linear"]
    assert [r.status.value for r in linear] == ["pass", "pass"]
    with_bias = next(r for r in linear if r.case == "with_bias")
    assert with_bias.message == (
        "5 variants: non-contiguous argument 0 (input), argument 1 (weight); "
        "requires_grad off for argument 0 (input), argument 1 (weight), argument 2 (bias)"
    )


def test_rounding_differences_of_a_low_precision_dtype_are_no_false_alarm(run_spec, find):
    # The strided path of this Function differs by a few units of bfloat16's precision,
    # well beyond the spec's rtol of 1e-3, yet both paths are right.
    report = run_spec(
        """
        target: tests.functions.layouts:StridedPathRoundsDifferently
        checks: [layouts]
        cases:
          - {name: bfloat16, inputs: [{shape: [8, 6], dtype: bfloat16, low: 0.5, high: 1.0}]}
          - {name: float16, inputs: [{shape: [8, 6], dtype: float16, low: 0.5, high: 1.0}]}
          - {name: float32, inputs: [{shape: [8, 6], dtype: float32, low: 0.5, high: 1.0}]}
        """
    )
    assert [(r.case, r.status.value) for r in report.results] == [
        ("bfloat16", "pass"),
        ("float16", "pass"),
        ("float32", "pass"),
    ]


def test_a_random_function_is_checked_for_crashes_only(run_spec, only):
    report = run_spec(layouts_spec(f"{LAYOUTS}:RandomMask", "[{shape: [3, 4]}]"))
    result = only(report, check="layouts")
    assert result.status.value == "pass"
    assert "only crashes were checked" in result.message


# Layouts that break a Function.


def test_view_of_a_non_contiguous_argument_fails_the_bundled_example(run_spec, only):
    report = run_spec(with_checks(LAYOUTS_BUGGY_SPEC, ["layouts"]))
    result = only(report, target=FLATTEN_SCALE, check="layouts")
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (0, "x")
    assert result.message.startswith("fails for a non-contiguous argument 0 (x): forward raised")
    assert "view size is not compatible" in result.message
    assert ".reshape()" in result.hint
    assert any("x.view(" in line for line in result.details)
    # Where forward raised, not backward's definition, though the check is about backward.
    source = ROOT / "gradverify" / "examples" / "layouts.py"
    assert Path(result.source_file or "") == source
    lines = source.read_text(encoding="utf-8").splitlines()
    assert result.source_line == 1 + next(i for i, ln in enumerate(lines) if "return x.view(" in ln)


def test_the_bundled_example_passes_every_other_first_order_check(run_spec, find):
    checks = ["forward", "backward", "finite_difference", "gradcheck", "gradgradcheck"]
    report = run_spec(with_checks(LAYOUTS_BUGGY_SPEC, checks))
    assert {r.check for r in report.results} == set(checks)
    assert [r for r in report.results if r.status.value != "pass"] == []


def test_the_bundled_example_passes_with_non_contiguous_turned_off(run_spec, only):
    report = run_spec(
        layouts_spec(
            FLATTEN_SCALE, "[{shape: [2, 3, 2]}, {shape: [6]}]", "variants: {non_contiguous: false}"
        )
    )
    result = only(report, check="layouts")
    assert result.status.value == "pass"
    assert result.message == (
        "2 variants: requires_grad off for argument 0 (x), argument 1 (scale)"
    )


def test_a_kernel_reading_raw_memory_gives_a_different_output(run_spec, only):
    report = run_spec(layouts_spec(f"{LAYOUTS}:RowMajorKernel", "[{shape: [3, 4]}]"))
    result = only(report, check="layouts")
    assert result.status.value == "fail"
    assert result.message.startswith(
        "gives a different output 0 for a non-contiguous argument 0 (x): element ["
    )
    assert (result.input_index, result.output_index) == (0, 0)
    assert result.element is not None and len(result.element) == 2
    assert result.mismatched is not None and 0 < result.mismatched <= result.total == 12
    assert ".contiguous()" in result.hint


def test_a_gradient_left_unassigned_when_not_needed_fails(run_spec, find):
    report = run_spec(layouts_spec(f"{LAYOUTS}:UnassignedWhenNotNeeded", TWO_MATRICES))
    [result] = find(report, check="layouts", status="fail")
    assert (result.input_index, result.input_name) == (1, "w")
    assert result.message.startswith(
        "fails when argument 1 (w) has requires_grad off: backward raised UnboundLocalError"
    )
    assert "needs_input_grad" in result.hint


def test_a_wrong_fast_path_for_a_frozen_argument_gives_a_different_gradient(run_spec, find):
    report = run_spec(layouts_spec(f"{LAYOUTS}:WrongFastPath", TWO_MATRICES))
    [result] = find(report, check="layouts", status="fail")
    assert result.message.startswith(
        "gives a different gradient of argument 0 (x) when argument 1 (w) has requires_grad off: "
        "element ["
    )
    # The element indexes x's gradient, so the result names x.
    assert (result.input_index, result.input_name) == (0, "x")
    assert result.mismatched == result.total == 12
    assert result.element is not None and len(result.element) == 2


# ctx.needs_input_grad: wasted work is a warning, never a failure.


def test_ignoring_needs_input_grad_warns_once_naming_every_frozen_argument(run_spec, find):
    report = run_spec(layouts_spec(f"{LAYOUTS}:IgnoresNeedsInputGrad", TWO_MATRICES))
    assert not find(report, status="fail")
    (warning,) = find(report, check="layouts", status="warn")
    assert warning.input_index is None  # several arguments: the message names them
    assert warning.message == (
        "backward computes gradients for argument 0 (x) and argument 1 (w) even when their "
        "ctx.needs_input_grad entry is False (wasted work)"
    )
    assert warning.hint == "check ctx.needs_input_grad before computing each gradient"
    assert find(report, check="layouts", status="pass")


def test_one_wasted_gradient_names_its_argument_and_flag(run_spec, only):
    report = run_spec(layouts_spec("tests.functions.report:MulWastesOnlyW", TWO_MATRICES))
    warning = only(report, check="layouts", status="warn")
    assert (warning.input_index, warning.input_name) == (1, "w")
    assert warning.message == (
        "backward computes a gradient for argument 1 (w) although ctx.needs_input_grad[1] is "
        "False (wasted work)"
    )


@pytest.mark.parametrize("function", ["AddSharesGrad", "AddSharesComputedGrad"])
def test_a_gradient_handed_on_again_is_not_wasted_work(run_spec, only, function):
    # `return grad, grad` (or one computed gradient twice) computes nothing for the argument
    # that needs none: no warning.
    report = run_spec(layouts_spec(f"tests.functions.sweep:{function}", TWO_MATRICES))
    result = only(report, check="layouts")
    assert result.status.value == "pass", result
    assert "requires_grad off" in result.message


# Turning variants off.


def test_turning_every_variant_off_skips(run_spec, only):
    report = run_spec(
        layouts_spec(
            f"{LAYOUTS}:RowMajorKernel",
            "[{shape: [3, 4]}]",
            "variants: {non_contiguous: false, requires_grad_off: false}",
        )
    )
    result = only(report, check="layouts")
    assert result.status.value == "skip"
    assert "turned off" in result.message


def test_nothing_to_try_skips_with_the_reason(run_spec, only):
    report = run_spec(
        layouts_spec("tests.functions.correct:Square", "[{shape: [4], requires_grad: false}]")
    )
    result = only(report, check="layouts")
    assert result.status.value == "skip"
    assert "no tensor argument of rank >= 2" in result.message
    assert "no argument requires grad" in result.message


def test_turning_requires_grad_off_variants_off_keeps_the_non_contiguous_ones(run_spec, only):
    report = run_spec(
        layouts_spec(
            f"{LAYOUTS}:UnassignedWhenNotNeeded",
            TWO_MATRICES,
            "variants: {requires_grad_off: false}",
        )
    )
    result = only(report, check="layouts")
    assert result.status.value == "pass"
    assert result.message == "2 variants: non-contiguous argument 0 (x), argument 1 (w)"


def test_a_crash_already_reported_by_backward_is_a_skip_pointing_at_it(run_spec, only):
    spec = layouts_spec("tests.functions.mapping:BackwardRaises", "[{shape: [3, 4]}]")
    report = run_spec(spec.replace("checks: [layouts]", "checks: [backward, layouts]"))
    assert only(report, check="backward").status.value == "fail"
    result = only(report, check="layouts")
    assert result.status.value == "skip"
    assert result.same_as == "backward"
    assert "exploded on purpose" not in result.message  # said once, by backward


def test_a_crash_in_the_declared_layout_alone_fails(run_spec, only):
    report = run_spec(layouts_spec("tests.functions.mapping:BackwardRaises", "[{shape: [3, 4]}]"))
    result = only(report, check="layouts")
    assert result.status.value == "fail"
    assert "backward raised ZeroDivisionError" in result.message
    assert result.same_as is None


# Building non-contiguous arguments.


@pytest.mark.parametrize("shape", [[3, 4], [4, 1], [1, 5], [2, 3, 2], [2, 1, 1]])
def test_non_contiguous_keeps_values_and_requires_grad(shape):
    tensor = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    changed = non_contiguous(tensor)
    assert changed is not None
    assert not changed.is_contiguous()
    assert changed.is_leaf and changed.requires_grad
    assert torch.equal(changed.detach(), tensor.detach())


def test_non_contiguous_handles_integer_tensors_and_impossible_layouts():
    integers = torch.arange(6).reshape(2, 3)
    changed = non_contiguous(integers)
    assert changed is not None and not changed.is_contiguous()
    assert not changed.requires_grad
    assert torch.equal(changed, integers)
    assert non_contiguous(torch.zeros(1, 1)) is None
    assert non_contiguous(torch.zeros(0, 3)) is None


# backward: one output used at a time, the other grad_outputs undefined.


def backward_spec(target: str) -> str:
    return f"""
        target: {target}
        checks: [backward]
        cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
        """


def test_backward_crashing_on_a_none_grad_output_fails(run_spec, only):
    report = run_spec(backward_spec(f"{LAYOUTS}:UnmaterializedCrashes"))
    result = only(report, check="backward")
    assert result.status.value == "fail"
    assert result.output_index == 0
    assert result.message.startswith(
        "backward crashes when only output 0 is used (the other grad_outputs are undefined/None): "
        "backward raised TypeError"
    )
    assert result.hint == (
        "treat a None grad_output as zeros, or keep ctx.set_materialize_grads(True)"
    )


@pytest.mark.parametrize(
    "target", [f"{LAYOUTS}:UnmaterializedHandlesNone", "tests.functions.correct:TwoOutputs"]
)
def test_backward_handling_undefined_grad_outputs_passes(run_spec, only, target):
    report = run_spec(backward_spec(target))
    assert only(report, check="backward").status.value == "pass"


# Wasted work is a habit of backward's: one warning per Function in a run, with its own switch.

THREE_CASES = """
        target: {target}
        checks: [layouts]
        {extra}
        cases:
          - {{name: a, inputs: [{{shape: [3]}}, {{shape: [3]}}]}}
          - {{name: b, inputs: [{{shape: [4]}}, {{shape: [4]}}]}}
          - {{name: c, inputs: [{{shape: [2, 2]}}, {{shape: [2, 2]}}]}}
        """


def test_wasted_work_is_one_warning_per_function_in_its_first_case(run_spec):
    report = run_spec(THREE_CASES.format(target="tests.functions.report:MulWastesOnlyW", extra=""))
    (warning,) = [r for r in report.results if r.status.value == "warn"]
    assert (warning.case, warning.input_name) == ("a", "w")
    assert WASTED_WORK in warning.message
    assert warning.notes[-1] == (
        "the same in 2 more case(s) of this Function (b, c); reported once per Function"
    )
    layouts = [r for r in report.results if r.check == "layouts" and r.status.value == "pass"]
    assert [r.case for r in layouts] == ["a", "b", "c"]  # every case still checked


def test_wasted_work_false_silences_the_warning_not_the_requires_grad_off_variant(run_spec):
    report = run_spec(
        THREE_CASES.format(
            target="tests.functions.report:WastesWCrashesWithoutX", extra="wasted_work: false"
        )
    )
    assert not [r for r in report.results if r.status.value == "warn"]
    # Freezing x still runs, and still finds the crash it causes.
    crashes = [r for r in report.results if r.failed]
    assert [(r.case, r.input_index) for r in crashes] == [("a", 0), ("b", 0), ("c", 0)]
    assert all("requires_grad off" in r.message for r in crashes), crashes
    # Without the switch the same Function warns, once.
    warned = run_spec(
        THREE_CASES.format(target="tests.functions.report:WastesWCrashesWithoutX", extra="")
    )
    assert [(r.case, r.input_index) for r in warned.results if r.status.value == "warn"] == [
        ("a", 1)
    ]
