"""The values inference tries forward on are the values its base case is checked on: a
guess that forward accepted on one draw and the case drawn differently would put a
correct Function outside its domain (NaN where the probe saw none) and call it wrong."""

from __future__ import annotations

import torch

from gradverify.inference.zeroconfig import infer_entry
from gradverify.inputs import build_inputs
from gradverify.target.loading import load_target
from tests.functions import inference as functions
from tests.inference.runs import failed_checks, zero_config

TARGET = "tests.functions.inference:SqrtShifted"


def test_the_base_case_is_drawn_as_the_probe_drew_it() -> None:
    functions.SEEN_BY_SQRT_SHIFTED.clear()
    entry, _ = infer_entry(load_target(TARGET))
    base = entry.spec.cases[0]
    (x,) = build_inputs(base, entry.spec.seed)
    probed = functions.SEEN_BY_SQRT_SHIFTED
    assert any(seen.shape == x.shape and torch.equal(seen, x) for seen in probed)


def test_a_function_nan_outside_its_domain_is_not_failed_on_a_guess() -> None:
    assert "forward" not in failed_checks(zero_config(TARGET))
