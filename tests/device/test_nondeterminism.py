"""Backward that differs run to run at rounding level (atomics) is not called wrong; one that
loses writes still fails (issue 24). Emulated on the CPU by tests/functions/nondeterministic.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gradverify.numerics.spreads import ROUNDING_ULPS, spreads

SPEC = """
target: tests.functions.nondeterministic:{name}
cases:
  - name: repeats
    inputs:
      - {{shape: [6, 3]}}
      - {{shape: [20], dtype: int64, low: 0, high: 5}}
"""


def test_rounding_spread_of_a_correct_backward_is_measured_and_allowed(
    run_spec: Callable[..., Any], find: Callable[..., list[Any]], only: Callable[..., Any]
) -> None:
    report = run_spec(SPEC.format(name="RowsAtomicNoise"))
    assert not find(report, status="fail"), [r.message for r in find(report, status="fail")]
    backward = only(report, check="backward")
    assert backward.status.value == "pass"
    assert "at rounding level" in backward.message
    assert "nondet_tol:" in backward.message  # the value that would say so in the spec
    # torch's gradcheck runs backward twice too: it is given the spread, and passes
    assert only(report, check="gradcheck").status.value == "pass"


def test_racy_writes_still_fail_as_nondeterministic_and_wrong(
    run_spec: Callable[..., Any], only: Callable[..., Any]
) -> None:
    report = run_spec(SPEC.format(name="RowsRacyWrites"))
    backward = only(report, check="backward")
    assert backward.status.value == "fail"
    assert "more than rounding explains" in backward.message
    assert "nondet_tol:" in backward.hint  # the measured spread, if it was meant
    assert backward.input_index == 0


def test_spread_within_rounding_of_the_gradients_dtype() -> None:
    gradient = torch.tensor([1.0, -4.0, 2.0], dtype=torch.float32)
    unit = torch.finfo(torch.float32).eps
    within = gradient + torch.tensor([0.0, 8 * unit * 4.0, 0.0])
    beyond = gradient + torch.tensor([0.0, 0.0, 2 * ROUNDING_ULPS * unit * 4.0])
    (small,) = spreads([gradient], [within])
    (large,) = spreads([gradient], [beyond])
    assert small.rounding and small.flat == 1
    assert not large.rounding and large.flat == 2
    assert spreads([gradient, None], [gradient.clone(), None]) == []


def test_a_sum_of_many_terms_per_entry_may_round_further() -> None:
    """index_add_ of 10^4 rows into each entry reorders 10^4 terms: rounding grows as their
    square root, so such a spread is still rounding, while the same spread of an entry that
    sums one term is not."""
    gradient = torch.tensor([100.0, -50.0], dtype=torch.float32)
    unit = torch.finfo(torch.float32).eps
    again = gradient + torch.tensor([1000 * unit * 100.0, 0.0])
    (one_term,) = spreads([gradient], [again], output_elements=2)
    (many_terms,) = spreads([gradient], [again], output_elements=20_000)
    assert not one_term.rounding
    assert many_terms.rounding
