"""Hints read from a Jacobian's structure (numerics/patterns.py, checks/backward/unreduced.py).

Each where it must appear, and where it must not: on a correct Function (quiet), and on a
different bug for which it would be a false lead (tests/functions/structure_hints.py).
"""

from __future__ import annotations

import pytest

FUNCTIONS = "tests.functions.structure_hints"


def run(run_spec, name, inputs, checks="[finite_difference]"):
    return run_spec(
        f"""
        target: {FUNCTIONS}:{name}
        checks: {checks}
        cases: [{{name: case, inputs: {inputs}}}]
        """
    )


def fd(run_spec, only, name, inputs):
    return only(run(run_spec, name, inputs), check="finite_difference")


# --- a sign flipped on one output -------------------------------------------------------------


def test_a_sign_flipped_on_one_output_is_named_for_that_output(run_spec, only):
    result = fd(run_spec, only, "SinSquareFlipped", "[{shape: [5]}]")
    assert result.status.value == "fail"
    assert result.hint.startswith("opposite sign for output 1 (")
    assert "output 0 right" in result.hint
    assert "missing minus in that output's term of backward" in result.hint


def test_a_correct_two_output_function_passes_quietly(run_spec, only):
    result = fd(run_spec, only, "SinSquare", "[{shape: [5]}]")
    assert result.status.value == "pass" and result.hint is None


def test_an_output_wrong_by_a_factor_is_no_sign_flip(run_spec, only):
    result = fd(run_spec, only, "SinSquareDoubled", "[{shape: [5]}]")
    assert result.status.value == "fail"
    assert result.hint is None or "opposite sign" not in result.hint


# --- a hard-coded axis -----------------------------------------------------------------------


def test_a_backward_reducing_over_the_last_axis_is_named_for_dim_0(run_spec, only):
    result = fd(run_spec, only, "SoftmaxLastDimBackward", "[{shape: [3, 4]}, 0]")
    assert result.status.value == "fail"
    assert result.hint.startswith("forward works along dim = 0 (axis 0), backward along axis -1")
    assert "`.sum(-1, keepdim=True)`" in result.hint
    assert "right only for dim = -1" in result.hint


@pytest.mark.parametrize("dim", [-1, 1])
def test_the_same_backward_is_right_for_the_last_axis(run_spec, only, dim):
    # On the case's own dim: explore off, whose other dims (-2) find the bug named above.
    report = run_spec(
        f"""
        target: {FUNCTIONS}:SoftmaxLastDimBackward
        checks: [finite_difference]
        explore: 0
        cases: [{{name: case, inputs: [{{shape: [3, 4]}}, {dim}]}}]
        """
    )
    result = only(report, check="finite_difference")
    assert result.status.value == "pass" and result.hint is None


def test_a_correct_softmax_passes_for_dim_0(run_spec, only):
    result = fd(run_spec, only, "Softmax", "[{shape: [3, 4]}, 0]")
    assert result.status.value == "pass" and result.hint is None


def test_a_forgotten_reduction_is_not_told_it_is_on_the_wrong_axis(run_spec, only):
    result = fd(run_spec, only, "SoftmaxForgotReduction", "[{shape: [3, 4]}, 0]")
    assert result.status.value == "fail"
    assert result.hint is None or "axis" not in result.hint


# --- repeated indices ------------------------------------------------------------------------

REPEATED = "[{shape: [6, 3]}, {values: [1, 4, 1, 2, 4, 4], dtype: int64}]"
UNIQUE = "[{shape: [6, 3]}, {values: [1, 4, 0, 2, 5], dtype: int64}]"


def test_assignment_with_repeated_indices_names_index_add(run_spec, only):
    result = fd(run_spec, only, "EmbeddingAssigns", REPEATED)
    assert result.status.value == "fail"
    assert result.hint.startswith(
        "wrong exactly at the elements of weight that forward reads more than once "
        "(6 of 18 elements; rows 1, 4 of weight, the values idx repeats)"
    )
    assert "`index_add_`" in result.hint
    assert "mask" not in result.hint
    assert result.mismatch_map == ("...", "xxx", "...", "...", "xxx", "...")


def test_assignment_without_repeats_is_right_and_quiet(run_spec, only):
    result = fd(run_spec, only, "EmbeddingAssigns", UNIQUE)
    assert result.status.value == "pass" and result.hint is None


def test_a_correct_embedding_passes_with_repeated_indices(run_spec, only):
    result = fd(run_spec, only, "Embedding", REPEATED)
    assert result.status.value == "pass" and result.hint is None


@pytest.mark.parametrize(
    ("name", "inputs"),
    [
        ("EmbeddingMasksRow", "[{shape: [6, 3]}, {values: [0, 4, 0, 2, 4], dtype: int64}]"),
        ("BiasAddKeepsFirstRow", "[{shape: [3, 4]}, {shape: [4]}]"),
    ],
)
def test_other_bugs_at_repeated_reads_get_no_index_add(run_spec, find, name, inputs):
    # A mask on a repeated row (wrong there, but not one contribution kept), and a broadcast
    # whose gradient keeps one row of several (no index to repeat).
    report = run(run_spec, name, inputs)
    failed = [r for r in find(report, check="finite_difference") if r.status.value == "fail"]
    assert failed
    assert all(r.hint is None or "index_add_" not in r.hint for r in failed)


# --- a broadcast gradient left to autograd ------------------------------------------------------

BIAS = "[{shape: [3, 4]}, {shape: [4]}]"
NUMERICAL = "[backward, finite_difference, gradcheck]"


def test_an_unreduced_broadcast_gradient_is_a_warning_that_says_it_is_right(run_spec, find, only):
    report = run(run_spec, "BiasAddUnreduced", BIAS, NUMERICAL)
    result = only(report, check="backward")
    assert result.status.value == "warn"
    assert (result.input_index, result.input_name) == (1, "b")
    assert "autograd sums it to [4] (over dim 0), and the gradient it delivers is right" in (
        result.message
    )
    assert "`grad.sum_to_size(b.shape)`" in result.hint
    assert "12 elements where 4 are kept" in result.hint and "sum kernel" in result.hint
    assert "only code that calls backward itself gets the unreduced tensor" in result.hint
    others = [r for r in report.results if r.check != "backward"]
    assert others and all(r.status.value == "pass" for r in others)


def test_an_unreduced_gradient_with_wrong_values_is_not_called_right(run_spec, find, only):
    report = run(run_spec, "BiasAddUnreducedDoubled", BIAS, NUMERICAL)
    result = only(report, check="backward")
    assert result.status.value == "warn"
    assert "is right" not in result.message
    assert "does not match central differences either" in result.message
    wrong = only(report, check="finite_difference", input_index=1)
    assert wrong.status.value == "fail"


def test_a_reduced_broadcast_gradient_passes_backward_quietly(run_spec, only):
    report = run(run_spec, "BiasAddKeepsFirstRow", BIAS, "[backward]")
    assert only(report, check="backward").status.value == "pass"


@pytest.mark.parametrize(
    ("name", "words"),
    [("PolarUnreducedAngle", "the gradient it delivers is right"),
     ("PolarUnreducedAngleNegated", "does not match central differences either")],
)  # fmt: skip
def test_an_unreduced_gradient_into_a_complex_output_is_judged_on_the_whole_output(
    run_spec, only, recwarn, name, words
):
    # r * exp(i theta): the loss a complex output's gradient is taken of is Re <v, y>, whose
    # imaginary part dropped would call a wrong gradient right (and warn from our code).
    report = run_spec(
        f"""
        target: tests.functions.complex_functions:{name}
        checks: {NUMERICAL}
        cases:
          - name: polar
            inputs: [{{shape: [3, 5]}}, {{shape: [5]}}]
        """
    )
    result = only(report, check="backward")

    assert (result.status.value, result.input_name) == ("warn", "theta")
    assert words in result.message
    assert not [w for w in recwarn if "discards the imaginary part" in str(w.message)]
