"""A backward right for the subspace a basis spans, not for the basis itself (issue 23):
gradverify.engine.gauge re-tests a first-order failure about an output with orthonormal
columns on <W, B Bᵀ> (gradverify.numerics.gauge), along the directions that keep a structured
argument's structure where the case gives it one. Functions: tests/functions/gauge.py; spec:
tests/specs/checks/gauge.yaml."""

from __future__ import annotations

import pytest
import torch

from gradverify.numerics import gauge, structures
from gradverify.usercode import UserCodeError
from tests.conftest import ROOT
from tests.functions.gauge import (
    LowerTriangleEigenvectors,
    LowerTriangleEigenvectorsGapSign,
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


def _structured(run_spec, name, structure, shape):
    found = run_spec(
        f"""
        target: {FUNCTIONS}:{name}
        checks: [finite_difference, gradcheck, func]
        cases: [{{name: matrix, inputs: [{{shape: {shape}, structure: {structure}}}]}}]
        """
    )
    return {r.check: r for r in found.results}


@pytest.mark.parametrize(
    ("structure", "shape"), [("symmetric", [5, 5]), ("spd", [5, 5]), ("symmetric", [2, 4, 4])]
)
def test_a_subspace_backward_of_a_symmetric_input_read_in_one_triangle_warns(
    run_spec, structure, shape
):
    # eigh reads A's lower triangle: element by element, even <W, B Bᵀ> has numerical 0
    # above the diagonal; along E_ij + E_ji backward is right for the subspace.
    found = _structured(run_spec, "LowerTriangleEigenvectors", structure, shape)
    assert not any(r.failed for r in found.values())
    for check in ("finite_difference", "gradcheck"):
        warning = found[check]
        assert warning.status.value == "warn", (check, warning.message)
        assert warning.message.startswith(
            "backward is right for functions of the subspace that output 0's columns span "
            f"(B Bᵀ), not for the basis B itself: the gradient of <W, B Bᵀ> for a agrees with "
            f"central differences along {structure} directions of a for {gauge.DRAWS} random"
        )
        assert (warning.input_index, warning.hint) == (0, None)


def test_a_subspace_backward_of_a_symmetric_input_with_a_bug_still_fails(run_spec):
    found = _structured(run_spec, "LowerTriangleEigenvectorsGapSign", "symmetric", [5, 5])
    for check in FIRST_ORDER:
        failure = found[check]
        assert failure.status.value == "fail", (check, failure.message)
        assert (failure.input_index, failure.input_name) == (0, "a")
        assert "; wrong also for the subspace along symmetric directions of a: the gradient " \
            "of <W, B Bᵀ> (B: output 0) for a is off along element [" in failure.message  # fmt: skip


def _symmetric(size, seed=0):
    plain = _leaf(size, seed).detach()
    return ((plain + plain.T) / 2).requires_grad_()


@pytest.mark.parametrize("size", [5, 46])  # 15 elementary directions; 1081, random ones
def test_the_subspace_gradient_of_a_symmetric_argument_is_checked_along_symmetric_directions(
    size,
):
    a = _symmetric(size)
    compared = {
        (function, structure): gauge.subspace_comparison(
            function.apply, (a,), 0, (0,), TOLERANCE, 1, structure
        )
        for function in (LowerTriangleEigenvectors, LowerTriangleEigenvectorsGapSign)
        for structure in (None, "symmetric")
    }
    assert compared[LowerTriangleEigenvectors, "symmetric"].ok
    assert not compared[LowerTriangleEigenvectors, None].ok  # the upper triangle is never read
    assert not compared[LowerTriangleEigenvectorsGapSign, "symmetric"].ok
    elementary = structures.count(a, "symmetric")
    assert elementary == size * (size + 1) // 2
    expected = elementary if elementary <= gauge.MOST_ELEMENTS else gauge.DIRECTIONS
    assert compared[LowerTriangleEigenvectors, "symmetric"].total == expected


def test_structure_keeping_directions_name_the_element_they_move():
    point = torch.zeros(2, 3, 3, dtype=torch.float64)
    moved = list(structures.elements(point, "symmetric"))
    assert len(moved) == structures.count(point, "symmetric") == 12
    assert moved[:3] == [(0, 0, 0), (0, 0, 1), (0, 0, 2)] and moved[6] == (1, 0, 0)
    direction = list(structures.elementary(point, "symmetric"))[1]
    assert direction[0, 0, 1] == direction[0, 1, 0] == 1 and direction.sum() == 2
    assert list(structures.elements(point[0], "lower"))[:3] == [(0, 0), (1, 0), (1, 1)]
    assert structures.words("spd", (0, 1, 2)) == "element [0, 1, 2] (with [0, 2, 1])"
    assert structures.words("lower", (2, 1)) == "element [2, 1]"
    assert gauge.location(point, "symmetric", 4) == "element [0, 1, 2] (with [0, 2, 1])"
    drawn = structures.projected(torch.randn(4, 3, 3, dtype=torch.float64), "upper")
    assert bool((drawn.tril(-1) == 0).all())


def test_a_wrong_second_derivative_after_a_subspace_warning_says_the_first_only_warned(
    run_spec,
):
    """First order warns (right for the subspace); the second derivative is wrong all the
    same, and its hint says what vouched for the first: a warning, not a pass."""
    found = run_spec(
        f"""
        target: {FUNCTIONS}:LowerTriangleEigenvectorsSavedBasis
        checks: [finite_difference, gradgradcheck]
        cases: [{{name: matrix, inputs: [{{shape: [5, 5], structure: symmetric}}]}}]
        """
    )
    by_check = {r.check: r for r in found.results}
    assert by_check["finite_difference"].status.value == "warn"
    second = by_check["gradgradcheck"]
    assert second.status.value == "fail", second.message
    assert second.hint.startswith(
        "finite_difference only warned about the first derivative on this case"
    )
    assert "values saved without grad" in second.hint
