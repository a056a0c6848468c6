"""Zero-config on patterns met in real packages (tests/functions/package_patterns.py): an
undeclared straight-through estimator passes by its construction (a pass-through that forgot
a factor is still a bug; a user's spec that writes `gradient: exact` keeps its verdict), a
class name that says surrogate, and a guessed callable the user's code calls with two
arguments."""

from __future__ import annotations

from gradverify.inference.choice import TENSOR, Choice
from gradverify.inference.from_signature import infer
from gradverify.inference.search.probe import probe
from gradverify.inference.spec_text import spec_text
from gradverify.inference.surrogates import passed_through
from gradverify.inference.zeroconfig import infer_entry
from gradverify.results import Report, Status
from gradverify.run import session
from gradverify.run.session import RunOptions
from gradverify.spec.load import SpecEntry
from gradverify.spec.models import FunctionSpec
from gradverify.target.loading import load_target

FUNCTIONS = "tests.functions.package_patterns"


def zero_config(name: str) -> tuple[Report, str]:
    entry, note = infer_entry(load_target(f"{FUNCTIONS}:{name}"))
    return session.run([entry], RunOptions(isolation=False, cache=False), [note]), note


def failed(report: Report) -> set[str]:
    return {result.check for result in report.results if result.status is Status.FAIL}


def surrogates(report: Report) -> set[str]:
    """The evidence of each pass that intent made of a disagreement with the derivative."""
    return {r.surrogate for r in report.results if r.surrogate is not None}


def test_an_undeclared_straight_through_estimator_passes_by_its_construction() -> None:
    built = {
        "SnapToGrid": "piecewise constant in x",
        "OneHotOfMax": "piecewise constant in scores",
        "TakeValueKeepGradient": "does not depend on x",
    }
    for name, evidence in built.items():
        report, _ = zero_config(name)
        assert not failed(report), name
        assert any(evidence in said for said in surrogates(report)), (name, surrogates(report))
        assert infer(load_target(f"{FUNCTIONS}:{name}")).surrogate is None  # judged, not guessed


def test_the_init_spec_of_a_straight_through_estimator_leaves_intent_to_the_checks() -> None:
    text = spec_text(infer(load_target(f"{FUNCTIONS}:SnapToGrid")))
    assert "gradient:" not in text


def test_the_rerouted_gradient_reaches_only_the_input_it_is_passed_to() -> None:
    assert passed_through(load_target(f"{FUNCTIONS}:TakeValueKeepGradient")) == (0,)
    assert passed_through(load_target(f"{FUNCTIONS}:ScaledGradient")) == ()


def test_a_pass_through_whose_forward_moves_with_the_input_is_still_a_bug() -> None:
    report, _ = zero_config("DoubleForgotten")
    assert "finite_difference" in failed(report)
    assert infer(load_target(f"{FUNCTIONS}:DoubleForgotten")).surrogate is None


def test_a_users_spec_that_writes_gradient_exact_keeps_its_verdict() -> None:
    def run(**gradient: str) -> Report:
        spec = FunctionSpec.model_validate(
            {
                "target": f"{FUNCTIONS}:SnapToGrid",
                **gradient,
                "cases": [{"name": "c", "inputs": [{"shape": [5]}]}],
            }
        )
        return session.run(
            [SpecEntry(spec=spec, file=None)], RunOptions(isolation=False, cache=False)
        )

    assert "finite_difference" in failed(run(gradient="exact"))
    silent = run()  # a spec that says nothing of intent: forward's construction does
    assert not failed(silent)
    assert surrogates(silent)


def test_a_class_name_that_says_surrogate_is_checked_as_one() -> None:
    report, note = zero_config("ScaledGradientReroute")
    assert not failed(report)
    assert "its name, ScaledGradientReroute, says so" in note


def test_a_forward_that_returns_its_input_makes_any_backward_deliberate() -> None:
    report, _ = zero_config("ScaledGradient")  # x.clone() forward, grad * 0.5 backward
    assert not failed(report)
    assert any("returns x unchanged" in said for said in surrogates(report))


def test_a_guessed_callable_called_with_two_arguments_is_a_failed_guess() -> None:
    inference = infer(load_target(f"{FUNCTIONS}:FlowStep"))
    assert inference.ran
    assert [c.value for c in inference.choices[:2]] == ["torch:mul", "torch:mul"]
    report, _ = zero_config("FlowStep")
    assert not failed(report)
    assert "finite_difference" in failed(zero_config("FlowStepWrongTime")[0])


def test_a_vector_guessed_as_a_matrix_that_broadcasts_the_other_gradients_is_retried() -> None:
    chosen = {c.name: c for c in infer(load_target(f"{FUNCTIONS}:ProjectMean")).choices}
    assert len(chosen["values"].shape) == 1
    assert chosen["values"].shape[0] == chosen["interp"].shape[0]
    assert not failed(zero_config("ProjectMean")[0])
    assert "finite_difference" in failed(zero_config("ProjectMeanWrong")[0])


def test_a_twin_failure_is_the_contract_check_by_check() -> None:
    """The plain twin's wrong rhs gradient is a warning (the structured case's rhs gradient
    is right), though the structured case fails gradgradcheck, a defect of its own."""
    report, _ = zero_config("QuadraticDiagonal")
    failures = {(r.case, r.check) for r in report.results if r.status is Status.FAIL}
    warned = {(r.case, r.check) for r in report.results if r.status is Status.WARN}
    assert ("inferred", "gradgradcheck") in failures
    assert not any(check == "finite_difference" for _, check in failures)
    assert any(check == "finite_difference" and "without" in case for case, check in warned)


def test_a_docstring_saying_natural_gradient_is_a_surrogate() -> None:
    report, note = zero_config("NaturalStep")
    assert not failed(report)
    assert "natural gradient" in note


def test_a_caller_documenting_natural_gradient_descent_makes_a_surrogate() -> None:
    report, note = zero_config("ExpToMeanParameters")  # only its caller's docstring says so
    assert not failed(report)
    assert "NaturalParameterModel (package_patterns.py:" in note and "natural gradient" in note
    report, note = zero_config("ExpToMeanParametersUncalled")  # the same code, undocumented
    assert "finite_difference" in failed(report)
    assert "surrogate" not in note


def test_a_sparse_operand_is_a_constant_never_differentiated() -> None:
    for name in ("SparseTimesDense", "AdjacencyMix"):
        first = infer(load_target(f"{FUNCTIONS}:{name}")).choices[0]
        assert first.requires_grad is False, name
        assert not failed(zero_config(name)[0]), name
    assert "finite_difference" in failed(zero_config("SparseTimesDenseWrong")[0])


def test_a_parameter_only_backward_reads_makes_a_surrogate() -> None:
    for name in ("LogWithAveragedGradient", "FlipGradient", "PullTowards"):
        report, note = zero_config(name)
        assert not failed(report), name
        assert "only backward reads" in note, name
    report, note = zero_config("ScaledLogForgotScale")
    assert "finite_difference" in failed(report)
    assert "surrogate" not in note


def test_a_matrix_read_in_a_quadratic_form_is_drawn_symmetric() -> None:
    chosen = {c.name: c for c in infer(load_target(f"{FUNCTIONS}:VarianceOfProjection")).choices}
    assert chosen["S"].structure == "symmetric"
    report, _ = zero_config("VarianceOfProjection")
    assert not failed(report)
    assert any(r.status is Status.WARN and "symmetric" in r.message for r in report.results)
    assert "finite_difference" in failed(zero_config("VarianceOfProjectionWrong")[0])


def test_a_random_forward_is_checked_under_the_same_random_numbers_in_every_call() -> None:
    """Finite differences of a sample measure its derivative under one eps, not the noise
    between two draws (common random numbers); a wrong pathwise gradient still fails."""
    assert not failed(zero_config("ReparameterizedSample")[0])
    assert "finite_difference" in failed(zero_config("ReparameterizedSampleWrong")[0])


def test_backward_unpacking_a_guessed_tensor_is_a_failed_guess() -> None:
    target = load_target(f"{FUNCTIONS}:PairScale")
    flat = [Choice("x", TENSOR, (4,)), Choice("coeffs", TENSOR, (4,))]
    outcome = probe(target, flat)
    assert (outcome.stage, outcome.misfit) == ("backward", True)
    inference = infer(target)
    assert inference.ran
    assert inference.choices[1].shape[0] == 2
    assert not failed(zero_config("PairScale")[0])


def test_a_first_argument_forward_broadcasts_takes_its_gradients_shape() -> None:
    """loc guessed [2, 3, 3] like the grid gets a [3] gradient: loc is broadcast, so the
    guess is retried at [3] (forward's output unchanged), never reported; a wrong loc
    gradient at [3] still fails, and a backward that forgets to expand a sum still does."""
    chosen = {c.name: c for c in infer(load_target(f"{FUNCTIONS}:ShiftedGrid")).choices}
    assert chosen["loc"].shape == (3,)
    assert chosen["shape"].value == (2, 3, 3)
    assert not failed(zero_config("ShiftedGrid")[0])
    assert "finite_difference" in failed(zero_config("ShiftedGridWrongLoc")[0])
    inference = infer(load_target(f"{FUNCTIONS}:RowSumForgotExpand"))
    assert not inference.ran
    assert "backward" in failed(zero_config("RowSumForgotExpand")[0])


def _spec_run(name: str, inputs: list[dict[str, object]]) -> Report:
    spec = FunctionSpec.model_validate(
        {"target": f"{FUNCTIONS}:{name}", "cases": [{"name": "c", "inputs": inputs}]}
    )
    return session.run([SpecEntry(spec=spec, file=None)], RunOptions(isolation=False, cache=False))


def test_sizes_backward_cannot_combine_on_every_guess_leave_the_target_without_inputs() -> None:
    """coeffs guessed at x's length, where backward needs one per pair of dims: a size
    mismatch on guessed shapes is a failed guess, so the target is without inputs with the
    reason (not ✗); a user's spec keeps its verdict either way."""
    target = load_target(f"{FUNCTIONS}:PairedPowers")
    outcome = probe(target, [Choice("x", TENSOR, (4,)), Choice("coeffs", TENSOR, (4,))])
    assert (outcome.stage, outcome.size_error) == ("backward", True)
    inference = infer(target)
    assert not inference.ran
    assert inference.stopped is not None and "must match the size" in inference.stopped
    assert not failed(_spec_run("PairedPowers", [{"shape": [4]}, {"shape": [2]}]))
    assert "backward" in failed(_spec_run("PairedPowers", [{"shape": [4]}, {"shape": [4]}]))
