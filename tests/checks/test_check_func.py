"""The `func` check: torch.func's transforms over a Function against finite differences."""

from __future__ import annotations

import warnings

import pytest

from gradverify.checks.func import CLASSIC, CUSTOM_OP, NOT_A_FUNCTION

TRANSFORMS = "tests.functions.transforms"
CHECK = "func"


def run_one(run_spec, target, inputs, checks="[func]", extra="", seed=None):
    """Run `checks` on one case of `target`; the Report."""
    return run_spec(
        f"""
        target: {target}
        checks: {checks}
        {extra}
        cases: [{{name: case, inputs: {inputs}}}]
        """,
        seed=seed,
    )


@pytest.mark.parametrize("seed", range(3))
def test_a_transformable_function_passes_grad_vjp_jacrev_and_jacfwd_in_one_line(
    run_spec, only, seed
):
    target = "gradverify.examples.transforms:Softplus"
    report = run_one(run_spec, target, "[{shape: [2, 3], low: -3.0, high: 3.0}, 2.0]", seed=seed)
    result = only(report, check=CHECK)
    assert result.status.value == "pass", result.message
    assert result.applies
    assert result.message == (
        "torch.func grad, vjp, jacrev, jacfwd agree with finite differences for argument 0 (x)"
    )
    assert not [note for note in result.notes if "not run" in note]


def test_grad_alone_wrong_names_the_transform_argument_element_and_values(run_spec, only):
    report = run_one(
        run_spec,
        f"{TRANSFORMS}:MulAddNeedsWrongIndex",
        "[{shape: [3]}, {shape: [3]}, {shape: [3]}]",
    )
    result = only(report, check=CHECK)  # vjp and jacrev (every argument at once) are right
    assert result.status.value == "fail"
    assert result.message.startswith("torch.func.grad gives a wrong gradient of argument 2 (b)")
    assert (result.input_index, result.input_name) == (2, "b")
    assert result.element is not None and len(result.element) == 1
    assert f"element [{result.element[0]}]" in result.message
    # b's gradient of Σ w·y is w: the transform gives 0 where backward and finite
    # differences agree on w's entry.
    assert result.analytical == 0.0
    assert result.numerical != 0.0
    assert f"finite differences {result.numerical:.6g}, backward {result.numerical:.6g}" in (
        result.message
    )
    assert result.value_labels == ("torch.func.grad", "finite differences")
    assert "needs_input_grad" in result.hint
    assert result.same_as is None


def test_a_classic_function_is_a_skip_saying_how_to_make_it_transformable(run_spec, only):
    result = only(
        run_one(run_spec, "tests.functions.correct:Square", "[{shape: [3]}]"), check=CHECK
    )
    assert result.status.value == "skip"
    assert result.applies is False
    assert result.message == CLASSIC
    assert "setup_context(ctx, inputs, output)" in result.message
    assert "generate_vmap_rule = True" in result.message


def test_without_a_vmap_rule_grad_vjp_and_jacrev_run_and_jacfwd_is_said_not_to_apply(
    run_spec, only
):
    result = only(run_one(run_spec, f"{TRANSFORMS}:SinNoVmapRule", "[{shape: [4]}]"), check=CHECK)
    assert result.status.value == "pass"
    # jacrev batches backward's plain operations, not the Function: no vmap rule needed.
    assert "grad, vjp, jacrev agree" in result.message
    assert "jacfwd" not in result.message
    assert any("jacfwd not run: it needs a vmap rule" in note for note in result.notes)


def test_a_transform_that_raises_fails_at_the_users_line_and_no_other_check_does(
    run_spec, find, only
):
    report = run_one(
        run_spec,
        "gradverify.examples.transforms:Narrow",
        "[{shape: [3, 5]}, 1, 4]",
        checks="[forward, backward, finite_difference, gradcheck, vmap, func]",
    )
    failed = find(report, status="fail")
    assert [r.check for r in failed] == [CHECK]  # a bug only torch.func shows
    result = failed[0]
    assert result.message.startswith(
        "torch.func.jacrev raised RuntimeError at gradverify/examples/transforms.py:69: vmap:"
    )
    assert "in-place write of a batched value" in result.hint
    assert "jacrev runs backward under torch.vmap" in result.hint
    assert any("transforms.py" in line for line in result.details)


def test_transforms_raising_the_same_error_are_one_finding(run_spec, only):
    report = run_one(run_spec, f"{TRANSFORMS}:SinRecomputedInBackward", "[{shape: [3]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.message.startswith(
        "torch.func.grad and jacrev raise RuntimeError at tests/functions/transforms.py:"
    )
    assert "torch.autograd.grad" in result.hint


def test_backward_wrong_everywhere_is_said_once_under_finite_difference(run_spec, find, only):
    report = run_one(
        run_spec,
        f"{TRANSFORMS}:SquareWrongBackward",
        "[{shape: [4]}]",
        checks="[finite_difference, func]",
    )
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.same_as == "finite_difference"
    assert result.message.startswith(
        "torch.func grad, vjp, jacrev give backward's gradient of argument 0 (x), which "
        "disagrees with finite differences at element"
    )
    # backward returns 3x for 2x: the transforms give backward's value, 1.5 × the true one
    assert result.analytical == pytest.approx(1.5 * result.numerical, rel=1e-4)


def test_backward_wrong_without_finite_difference_is_still_a_failure(run_spec, only):
    report = run_one(run_spec, f"{TRANSFORMS}:SquareWrongBackward", "[{shape: [4]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.same_as is None


def test_kinks_are_no_failure(run_spec, only):
    report = run_one(
        run_spec,
        f"{TRANSFORMS}:ReLUTransformable",
        "[{values: [-1.0, 0.0, 0.5, 2.0]}]",
        checks="[finite_difference, func]",
    )
    assert only(report, check="finite_difference").status.value == "warn"
    result = only(report, check=CHECK)
    assert result.status.value == "pass", result.message
    assert "jacfwd" in result.message


def test_float32_noise_follows_finite_difference_and_is_folded_under_it(run_spec, only):
    report = run_one(
        run_spec, f"{TRANSFORMS}:ExpInFloat32", "[{shape: [5]}]", checks="[finite_difference, func]"
    )
    finite_difference = only(report, check="finite_difference")
    result = only(report, check=CHECK)
    if finite_difference.failed:  # lost precision: finite_difference's finding, said once
        assert result.same_as == "finite_difference"
    else:
        assert result.status.value == "pass"


def test_large_inputs_compare_projections_and_leave_out_full_jacobians(run_spec, only):
    report = run_one(run_spec, "gradverify.examples.transforms:Softplus", "[{shape: [400]}, 1.0]")
    result = only(report, check=CHECK)
    assert result.status.value == "pass"
    assert result.message.startswith("torch.func grad, vjp agree")
    assert any(
        "jacrev and torch.func.jacfwd not run: randomized" in note and "wᵀJu" in note
        for note in result.notes
    )


def test_large_inputs_still_catch_a_transform_only_bug(run_spec, only):
    report = run_one(
        run_spec,
        f"{TRANSFORMS}:MulAddNeedsWrongIndex",
        "[{shape: [400]}, {shape: [400]}, {shape: [400]}]",
    )
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.message.startswith(
        "torch.func.grad gives a wrong gradient of argument 2 (b) along a random direction u"
    )
    assert result.element is None
    assert result.analytical == 0.0


def test_requested_randomized_mode_on_a_small_case_passes_a_correct_function(run_spec, only):
    report = run_one(
        run_spec, f"{TRANSFORMS}:SinNoVmapRule", "[{shape: [4]}]", extra="mode: randomized"
    )
    assert only(report, check=CHECK).status.value == "pass"


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        (f"{TRANSFORMS}:plain_sin", NOT_A_FUNCTION),
        ("gradverify.examples.custom_ops:mysin", CUSTOM_OP),
    ],
)
def test_plain_functions_and_custom_ops_do_not_apply(run_spec, only, target, reason):
    result = only(run_one(run_spec, target, "[{shape: [3]}]"), check=CHECK)
    assert (result.status.value, result.applies, result.message) == ("skip", False, reason)


def test_no_torch_warning_leaks(run_spec, only):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = run_one(run_spec, "gradverify.examples.transforms:Softplus", "[{shape: [3]}, 1.0]")
    assert only(report, check=CHECK).status.value == "pass"
    assert [str(w.message) for w in caught] == []


def test_the_bundled_transform_specs_pass_and_catch_their_bug(run_spec, find, in_repo):
    report = run_spec(in_repo / "specs" / "transforms.yaml")
    failed = find(report, status="fail")
    assert [(r.target.rsplit(":", 1)[1], r.check) for r in failed] == [("Narrow", CHECK)]
    softplus = find(report, target="gradverify.examples.transforms:Softplus", check=CHECK)
    assert [r.status.value for r in softplus] == ["pass"]


def test_setup_context_doing_something_twice_is_one_finding_of_the_transforms(run_spec, only):
    # setup_context shifts the output it saves in place; torch.func runs setup_context
    # again on its wrapper, so the transforms shift twice: a gradient off by 2, not 1.
    report = run_one(
        run_spec,
        "tests.functions.forms:ExpSavedOutputThenShiftedNewStyle",
        "[{shape: [4]}]",
        checks="[finite_difference, func]",
    )
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.message.startswith(
        "torch.func.grad, vjp and jacrev give a wrong gradient of argument 0 (x) at element"
    )
    assert result.same_as is None  # not finite_difference's finding: another value
    assert result.analytical == pytest.approx(result.numerical + 2)
    assert f"backward {result.numerical + 1:.6g}" in result.message
    assert "setup_context runs again under torch.func" in result.hint


def test_a_crash_vmap_already_reports_at_the_same_line_is_folded_under_it(run_spec, only):
    report = run_one(
        run_spec,
        f"{TRANSFORMS}:HardTanhMaskedWrite",
        "[{shape: [6], low: -0.9, high: 0.9}]",
        checks="[vmap, func]",
    )
    vmap = only(report, check="vmap")
    result = only(report, check=CHECK)
    assert vmap.failed and result.failed
    line = result.message.split(" at ", 1)[1].split(":")[1]
    assert f"tests/functions/transforms.py:{line}" in vmap.message
    assert result.same_as == "vmap"
