"""Zero-config learns a Function's contract from its code (tests/functions/contracts.py):
a correct twin passes, a buggy twin fails, and a guess outside the contract is never a
finding."""

from __future__ import annotations

import pytest

from gradverify.inference.choice import CALLABLE, TENSOR, Choice
from gradverify.inference.from_signature import infer
from gradverify.inference.spec_text import spec_text
from gradverify.inference.zeroconfig import InferenceError, infer_entry
from gradverify.results import Report, Status
from gradverify.target.loading import load_target
from tests.inference import runs
from tests.inference.runs import failed_checks

FUNCTIONS = "tests.functions.contracts"


def zero_config(name: str) -> Report:
    return runs.zero_config(f"{FUNCTIONS}:{name}")


def chosen(name: str) -> dict[str, Choice]:
    return runs.chosen(f"{FUNCTIONS}:{name}")


@pytest.mark.parametrize(
    ("correct", "buggy"),
    [
        ("ApplyFn", "ApplyFnForgotChain"),
        ("SPDSolve", "SPDSolveWrongSign"),
        ("CholeskyLogDet", "CholeskyLogDetHalved"),
        ("FlatGram", "FlatGramForgotTranspose"),
        ("AssertedFlatGram", "AssertedFlatGramForgotTranspose"),
        ("BatchTraceOfSquare", "BatchTraceOfSquareForgotTranspose"),
        ("SymmetricQuadForm", "SymmetricQuadFormForgotTwo"),
        ("BroadcastTo", "BroadcastToForgotSum"),
        ("AddCoarseLevel", "AddCoarseLevelAveraged"),
    ],
)
def test_the_correct_twin_passes_and_the_buggy_twin_fails(correct: str, buggy: str) -> None:
    passing = zero_config(correct)
    failing = zero_config(buggy)

    assert failed_checks(passing) == set()
    checked = {r.status for r in passing.results if r.check == "finite_difference"}
    assert checked and checked <= {Status.PASS, Status.WARN}  # WARN: right along the structure
    assert failed_checks(failing) & {"backward", "finite_difference", "gradcheck"}


def test_a_parameter_named_fn_gets_a_function() -> None:
    fn = chosen("ApplyFn")["fn"]

    assert (fn.kind, fn.value, fn.item) == (CALLABLE, "torch:sin", {"callable": "torch:sin"})


def test_cholesky_in_forward_asks_for_an_spd_matrix() -> None:
    matrix = chosen("SPDSolve")["A"]

    assert (matrix.shape, matrix.structure) == ((3, 3), "spd")
    assert "cholesky" in matrix.reason


@pytest.mark.parametrize("name", ["FlatGram", "AssertedFlatGram"])
def test_a_docstring_or_an_assert_gives_the_shape(name: str) -> None:
    assert chosen(name)["x"].shape == (2, 3, 9)


def test_a_batch_of_square_matrices_is_tried() -> None:
    assert chosen("BatchTraceOfSquare")["m"].shape == (2, 3, 3)


def test_a_tensor_where_backward_calls_a_function_is_a_failed_guess_not_a_finding() -> None:
    # forward never calls `dynamics`, backward does: a tensor there raises TypeError in
    # backward, which is the guess's fault; nothing else fits, so no inputs and the reason.
    with pytest.raises(InferenceError) as stopped:
        infer_entry(load_target(f"{FUNCTIONS}:ScaledDynamics"))

    assert "'Tensor' object is not callable" in stopped.value.reason
    assert "contract" in stopped.value.reason


def test_out_is_a_tensor_written_into_not_differentiated() -> None:
    out = chosen("ScaleInto")["out"]

    assert (out.kind, out.requires_grad) == (TENSOR, False)
    assert failed_checks(zero_config("ScaleInto")) == set()


def test_a_failure_only_without_the_asked_structure_is_a_warning_naming_it() -> None:
    report = zero_config("SymmetricQuadForm")

    warned = [r for r in report.results if r.status is Status.WARN and "symmetric" in r.message]
    assert warned, [r.message for r in report.results if r.status is not Status.PASS]
    assert all("without symmetric" in r.case for r in warned)
    assert "passes on symmetric inputs" in warned[0].message
    assert "structure: symmetric" in warned[0].message


def test_a_literal_every_call_site_passes_is_passed() -> None:
    size = chosen("BroadcastTo")["target_size"]

    assert size.value == (3, 4)
    assert "as the package calls it (contracts.py:" in size.reason


def test_a_function_the_module_passes_at_its_call_site_is_passed() -> None:
    # ScaledDynamics without a call site has no inputs (above); its twin that the module
    # calls with `decay` gets that function and passes.
    dynamics = chosen("ScaledDynamicsCalled")["dynamics"]

    assert (dynamics.kind, dynamics.value) == (CALLABLE, f"{FUNCTIONS}:decay")
    assert failed_checks(zero_config("ScaledDynamicsCalled")) == set()


def test_the_written_spec_keeps_the_structure_and_leaves_the_plain_twin_out() -> None:
    text = spec_text(infer(load_target(f"{FUNCTIONS}:SymmetricQuadForm")))

    assert "structure: symmetric" in text
    assert "without symmetric" not in text


def test_a_number_on_which_forward_returns_no_tensor_is_a_failed_guess() -> None:
    # backward leaves shift's gradient None, so a number is tried for it; forward then
    # returns that number, no tensor: the guess is outside the contract and shift stays a
    # tensor, where the checks pass.
    shift = chosen("ShiftOrPass")["shift"]

    assert shift.kind == TENSOR
    assert failed_checks(zero_config("ShiftOrPass")) == set()


def test_jaxtyping_annotations_give_shapes_named_dims_one_size_each() -> None:
    points, weights = chosen("WeightedSum").values()

    assert points.shape == (2, 4, 3)  # N is not the literal 3
    assert weights.shape == (2, 4)
    assert failed_checks(zero_config("WeightedSum")) == set()


@pytest.mark.parametrize(
    ("name", "parameter", "structure"),
    [
        ("TriangularSolve", "L", "lower"),
        ("UpperSolve", "R", "upper"),
        ("SmallestEigenvalue", "S", "symmetric"),
    ],
)
def test_a_name_or_the_op_applied_gives_the_structure(
    name: str, parameter: str, structure: str
) -> None:
    matrix = chosen(name)[parameter]

    assert (matrix.shape, matrix.structure) == ((3, 3), structure)


def test_docstring_words_give_a_tensor_its_structure_and_leave_a_number_a_number() -> None:
    x, eps = chosen("SafeLog").values()

    assert (x.kind, x.structure) == (TENSOR, "positive")
    assert eps.kind != TENSOR
    assert failed_checks(zero_config("SafeLog")) == set()


def test_a_correct_function_that_reads_one_triangle_warns_and_a_wrong_one_fails() -> None:
    # eigh reads the lower triangle: perturbing an upper element alone changes nothing, so
    # the element-wise checks fail a correct backward; along E_ij + E_ji it is right.
    correct, buggy = zero_config("SmallestEigenvalue"), zero_config("SmallestEigenvalueDoubled")

    assert failed_checks(correct) == set()
    warned = [r for r in correct.results if r.status is Status.WARN and r.check == "gradcheck"]
    assert warned and "agrees with central differences along all 6 directions" in warned[0].message
    assert failed_checks(buggy) & {"finite_difference", "gradcheck"}


def test_a_documented_shape_with_arithmetic_sizes_its_dims_to_fit() -> None:
    """`coarse: [B, C, H/2, W/2]` beside `fine: [B, C, H, W]`: H and W even, halved."""
    inputs = chosen("AddCoarseLevel")
    fine, coarse = inputs["fine"].shape, inputs["coarse"].shape
    assert fine[:2] == coarse[:2] and fine[2] != fine[3]
    assert (coarse[2] * 2, coarse[3] * 2) == fine[2:]
