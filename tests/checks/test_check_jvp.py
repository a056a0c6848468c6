"""The `jvp` check: the Function's forward-mode derivative against central differences."""

from __future__ import annotations

import pytest

from gradverify.checks.jvp import NO_JVP, NOT_A_FUNCTION, SURROGATE

FORWARD_MODE = "tests.functions.forward_mode"
CHECK = "jvp"


def run_one(run_spec, name, inputs, checks="[jvp]", extra="", seed=None):
    """Run `checks` on one case of tests.functions.forward_mode:<name>; the Report."""
    return run_spec(
        f"""
        target: {FORWARD_MODE}:{name}
        checks: {checks}
        {extra}
        cases: [{{name: case, inputs: {inputs}}}]
        """,
        seed=seed,
    )


@pytest.mark.parametrize("seed", range(3))
def test_correct_jvps_pass_for_every_argument(run_spec, find, seed):
    report = run_spec(
        f"""
        functions:
          - target: {FORWARD_MODE}:SquareWithJvp
            checks: [jvp]
            cases:
              - {{name: vector, inputs: [{{shape: [5]}}]}}
              - {{name: matrix, inputs: [{{shape: [2, 3], low: -3.0, high: 3.0}}]}}
              - {{name: scalar, inputs: [{{shape: []}}]}}
              - {{name: complex, inputs: [{{shape: [3], dtype: complex128}}]}}
          - target: {FORWARD_MODE}:ScaledMulWithJvp
            checks: [jvp]
            cases: [{{name: pair, inputs: [{{shape: [2, 2]}}, {{shape: [2, 2]}}, 2.5]}}]
        """,
        seed=seed,
    )
    results = find(report, check=CHECK)
    assert len(results) == 6
    assert all(r.status.value == "pass" for r in results), [r.message for r in results]
    pair = find(report, target=f"{FORWARD_MODE}:ScaledMulWithJvp")
    assert [(r.input_index, r.input_name) for r in pair] == [(0, "a"), (1, "b")]  # no literal
    assert "argument 1 (b)" in pair[1].message
    assert pair[1].total == 4


def test_lower_precision_is_checked_in_float64_with_a_note(run_spec, only):
    report = run_one(run_spec, "SquareWithJvp", "[{shape: [4], dtype: float32}]")
    result = only(report, check=CHECK)
    assert result.status.value == "pass"
    assert result.notes == ("argument 0 (x) promoted from float32 to float64 for this check",)


def test_missing_factor_is_caught_although_backward_is_right(run_spec, only):
    report = run_one(
        run_spec, "SquareJvpMissingFactor", "[{shape: [5]}]", "[finite_difference, jvp]"
    )
    assert only(report, check="finite_difference").status.value == "pass"
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name, result.output_index) == (0, "x", 0)
    assert len(result.element) == 1
    assert result.analytical == pytest.approx(result.numerical / 2, rel=1e-6)
    assert (result.mismatched, result.total) == (5, 5)
    assert f"output 0 element [{result.element[0]}]" in result.message
    assert "a tangent of argument 0 (x)" in result.message
    assert "factor 1/2" in result.hint
    assert "bug is in jvp alone" in result.hint


def test_ignored_tangent_blames_that_argument_only(run_spec, find):
    report = run_one(run_spec, "MulJvpDropsSecondTangent", "[{shape: [3]}, {shape: [3]}]")
    first, second = find(report, check=CHECK)
    assert (first.input_index, first.status.value) == (0, "pass")
    assert (second.input_index, second.input_name, second.status.value) == (1, "b", "fail")
    assert second.analytical == 0.0
    assert second.numerical != 0.0
    assert "zero tangent along argument 1 (b)" in second.hint


def test_wrong_output_tangent_names_the_output(run_spec, only):
    report = run_one(run_spec, "SinCosJvpWrongSign", "[{shape: [4]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.output_index == 1
    assert (result.mismatched, result.total) == (4, 8)  # sin's 4 tangents are right
    assert result.analytical == pytest.approx(-result.numerical, rel=1e-6)
    assert "opposite sign" in result.hint


def test_tangents_together_are_tried_after_each_alone(run_spec, find):
    report = run_one(run_spec, "MulJvpOneTangentAtATime", "[{shape: [3]}, {shape: [3]}]")
    results = find(report, check=CHECK)
    assert [(r.input_index, r.status.value) for r in results] == [
        (0, "pass"),
        (1, "pass"),
        (None, "fail"),
    ]
    assert "every argument at once" in results[2].message
    assert "combines the tangents wrongly" in results[2].hint


def test_a_kink_warns_and_never_fails(run_spec, only):
    report = run_one(run_spec, "ReLUWithJvp", "[{values: [-1.0, 0.0, 0.5]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "warn"
    assert (result.output_index, result.element) == (0, (1,))  # x == 0
    assert result.analytical == 0.0
    assert "non-differentiable point" in result.message
    assert "lies between them" in result.message
    assert any(note.startswith("1 of 3 entries sit at non-differentiable") for note in result.notes)


def test_a_real_bug_still_fails_next_to_an_excused_kink(run_spec, only):
    report = run_one(run_spec, "ReLUJvpForgotMask", "[{values: [-1.0, 0.0, 0.5]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.element == (0,)  # x == -1: jvp passes the tangent, the slope is 0
    assert result.numerical == 0.0
    assert (result.mismatched, result.total) == (1, 3)
    assert any(note.startswith("1 of 3 entries sit at non-differentiable") for note in result.notes)


def test_jvp_reading_tensors_saved_for_backward_fails_with_the_lead(run_spec, only):
    report = run_one(run_spec, "JvpWithoutSaveForForward", "[{shape: [4]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.message.startswith("jvp raised ValueError at tests/functions/forward_mode.py:")
    assert "ctx.save_for_forward" in result.hint
    assert any("ctx.saved_tensors" in line for line in result.details)


def jvp_failure(run_spec, only, target):
    report = run_spec(
        f"""
        target: {target}
        checks: [jvp]
        cases: [{{name: case, inputs: [{{shape: [4]}}]}}]
        """
    )
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    return result


@pytest.mark.parametrize(
    ("name", "how"),
    [
        ("JvpRaisesNotImplemented", "(it raises NotImplementedError at tests/functions/hints.py:"),
        ("JvpPass", "(it returns None)"),
    ],
)
def test_a_placeholder_jvp_is_called_not_implemented(run_spec, only, name, how):
    result = jvp_failure(run_spec, only, f"tests.functions.hints:{name}")
    assert result.message.startswith(f"the Function's jvp is not implemented {how}")
    assert "INTERNAL ASSERT" not in result.message
    assert result.hint.startswith("implement it, or remove it")
    assert "save_for_forward" not in result.hint


@pytest.mark.parametrize(
    ("target", "lead"),
    [
        (f"{FORWARD_MODE}:JvpWithoutSaveForForward", "likely a missing ctx.save_for_forward"),
        ("tests.functions.hints:JvpReadsMissingAttribute", "jvp reads ctx.scale, which forward"),
        ("tests.functions.hints:JvpIntegerTangent", "not a floating point tensor"),
    ],
)
def test_a_jvp_that_crashes_gets_the_lead_its_error_shows(run_spec, only, target, lead):
    result = jvp_failure(run_spec, only, target)
    assert "not implemented" not in result.message
    assert lead in result.hint
    if "save_for_forward" not in lead:
        assert "save_for_forward" not in result.hint


def test_tangent_in_a_lower_dtype_fails(run_spec, only):
    report = run_one(run_spec, "JvpInFloat32", "[{shape: [4]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert (result.input_index, result.output_index) == (0, 0)
    assert "float32 tangent for output 0, which is float64" in result.message


@pytest.mark.parametrize(("max_error", "status"), [(0.6, "pass"), (0.4, "fail")])
def test_approximate_gradients_are_judged_by_their_relative_max_error(
    run_spec, only, max_error, status
):
    # jvp gives half the derivative: a relative error of 0.5.
    extra = f"gradient: approximate\n        max_error: {max_error}"
    report = run_one(run_spec, "SquareJvpMissingFactor", "[{shape: [5]}]", extra=extra)
    assert only(report, check=CHECK).status.value == status


def test_surrogate_gradients_are_skipped(run_spec, only):
    extra = "gradient: surrogate"
    report = run_one(run_spec, "SquareJvpMissingFactor", "[{shape: [5]}]", extra=extra)
    result = only(report, check=CHECK)
    assert (result.status.value, result.message) == ("skip", SURROGATE)


def test_functions_without_jvp_and_plain_callables_are_skipped(run_spec, find):
    report = run_spec(
        f"""
        functions:
          - target: tests.functions.correct:Square
            checks: [jvp]
            cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
          - target: {FORWARD_MODE}:SquareGeneratedVmap
            checks: [jvp]
            cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
          - target: {FORWARD_MODE}:plain_square
            checks: [jvp]
            cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
        """
    )
    assert [(r.status.value, r.message) for r in find(report, check=CHECK)] == [
        ("skip", NO_JVP),
        ("skip", NO_JVP),
        ("skip", NOT_A_FUNCTION),
    ]


def test_nothing_to_differentiate_is_skipped(run_spec, only):
    report = run_one(run_spec, "SquareWithJvp", "[{shape: [4], requires_grad: false}]")
    result = only(report, check=CHECK)
    assert (result.status.value, result.message) == ("skip", "no argument requires grad")
