"""A backward right for the subspace a basis spans, not for the basis itself (issue 23):
gradverify.engine.gauge re-tests a first-order failure about an output with orthonormal
columns on <W, B Bᵀ> (gradverify.numerics.gauge). Functions: tests/functions/gauge.py; spec:
tests/specs/checks/gauge.yaml."""

from __future__ import annotations

import pytest
import torch

from gradverify.numerics import gauge
from gradverify.usercode import UserCodeError
from tests.conftest import ROOT
from tests.functions.gauge import (
    SmallestEigenvectors,
    SmallestEigenvectorsFull,
    SmallestEigenvectorsGapSign,
)

GAUGE_SPEC = ROOT / "tests" / "specs" / "checks" / "gauge.yaml"
FUNCTIONS = "tests.functions.gauge"
FIRST_ORDER = ("finite_difference", "gradcheck", "func")
TOLERANCE = (1e-6, 1e-5, 1e-3)  # the spec's default eps, atol, rtol


@pytest.fixture(scope="module")
def report(run_spec):
    return run_spec(GAUGE_SPEC)


def results(report, name, case="matrix"):
    found = {
        r.check: r for r in report.results if r.target == f"{FUNCTIONS}:{name}" and r.case == case
    }
    assert found, name
    return found


@pytest.mark.parametrize("case", ["matrix", "batch"])
def test_a_subspace_backward_warns_where_the_full_one_passes(report, case):
    subspace = results(report, "SmallestEigenvectors", case)
    assert not any(r.failed for r in subspace.values())
    for check in ("finite_difference", "gradcheck"):
        warning = subspace[check]
        assert warning.status.value == "warn", warning.message
        assert warning.message.startswith(
            "backward is right for functions of the subspace that output 0's columns span "
            "(B Bᵀ), not for the basis B itself"
        )
        assert "`gradient: surrogate`" in warning.message
        assert "On the basis itself: gradient of argument 0 (a) is wrong at" in warning.message
        assert (warning.input_index, warning.input_name, warning.hint) == (0, "a", None)
    assert subspace["finite_difference"].output_index == 0
    full = results(report, "SmallestEigenvectorsFull", case)
    assert {check: r.status.value for check, r in full.items()} == dict.fromkeys(
        FIRST_ORDER, "pass"
    )


def test_func_alone_warns_for_a_subspace_backward(run_spec):
    found = run_spec(
        f"""
        target: {FUNCTIONS}:SmallestEigenvectors
        checks: [func]
        cases: [{{name: matrix, inputs: [{{shape: [6, 6]}}]}}]
        """
    )
    (result,) = found.results
    assert result.status.value == "warn", result.message
    assert "backward is right for functions of the subspace" in result.message
    assert "On the basis itself: torch.func" in result.message


@pytest.mark.parametrize(
    "name", ["SmallestEigenvectorsGapSign", "SmallestEigenvectorsUnsymmetrized"]
)
def test_a_subspace_backward_with_a_bug_still_fails_naming_the_argument(report, name):
    found = results(report, name)
    for check in FIRST_ORDER:
        failure = found[check]
        assert failure.status.value == "fail", (check, failure.message)
        assert (failure.input_index, failure.input_name) == (0, "a")
        assert "wrong also for the subspace: the gradient of <W, B Bᵀ> (B: output 0) for a is " \
            "off at element [" in failure.message  # fmt: skip


def test_another_output_wrong_is_no_matter_of_the_gauge(report):
    # (λ, B): B's backward for the subspace only warns; λ's gradient doubled still fails,
    # with nothing said about a subspace.
    right = results(report, "EigenpairsSubspace")
    assert {r.status.value for r in right.values()} == {"warn"}
    wrong = results(report, "EigenpairsWrongValues")
    for failure in wrong.values():
        assert failure.status.value == "fail"
        assert "subspace" not in failure.message
    assert wrong["finite_difference"].output_index == 0  # λ


def test_only_outputs_with_orthonormal_columns_are_bases():
    generator = torch.Generator().manual_seed(0)
    a = torch.rand(6, 6, generator=generator, dtype=torch.float64).requires_grad_()
    basis = SmallestEigenvectors.apply(a)
    square, _ = torch.linalg.qr(a)  # B Bᵀ = I: nothing to test
    scaled = 2 * basis
    plain = torch.rand(6, 2, generator=generator, dtype=torch.float64).requires_grad_()
    stacked = torch.stack([basis, scaled])  # one matrix of the batch is no basis
    detached = basis.detach()  # no gradient flows through it
    outputs = (basis, square, scaled, plain, stacked, detached, basis.T)
    assert gauge.orthonormal_bases(outputs) == (0,)


def _leaf(size, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (
        torch.rand(size, size, generator=generator, dtype=torch.float64) * 2 - 1
    ).requires_grad_()


@pytest.mark.parametrize(
    ("function", "agrees"),
    [(SmallestEigenvectors, True), (SmallestEigenvectorsFull, True),
     (SmallestEigenvectorsGapSign, False)],
)  # fmt: skip
def test_the_subspace_gradient_of_a_large_argument_is_checked_along_directions(function, agrees):
    a = _leaf(36)  # 1296 elements, more than MOST_ELEMENTS
    assert a.numel() > gauge.MOST_ELEMENTS
    comparison = gauge.subspace_comparison(function.apply, (a,), 0, (0,), TOLERANCE, seed=1)
    assert comparison.ok is agrees
    assert comparison.total == gauge.DIRECTIONS


def test_the_subspace_gradient_of_a_plain_basis_is_backward_against_differences():
    a = _leaf(6)
    right = gauge.subspace_comparison(SmallestEigenvectors.apply, (a,), 0, (0,), TOLERANCE, 1)
    assert right.ok and right.total == a.numel()
    wrong = gauge.subspace_comparison(
        SmallestEigenvectorsGapSign.apply, (a,), 0, (0,), TOLERANCE, 1
    )
    assert not wrong.ok
    assert gauge.others_comparison(SmallestEigenvectors.apply, (a,), 0, (0,), TOLERANCE, 1) is None


def test_a_forward_that_raises_is_the_user_codes_error():
    def broken(a):
        raise ValueError("no")

    with pytest.raises(UserCodeError):
        gauge.subspace_comparison(broken, (_leaf(6),), 0, (0,), TOLERANCE, 1)
