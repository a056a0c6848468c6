"""An order between two parameters that the code states (`lo < hi`: a docstring, an assert,
a raise) is kept by every inferred case (issue 23): a clamp with learnable bounds is right
only while lo < hi, so a case that breaks the order is a failed guess, not a finding
(tests/functions/ordered.py)."""

from __future__ import annotations

from gradverify.inference.choice import Choice
from gradverify.inference.rules.order import Order, read_orders
from gradverify.inference.spec_text import spec_text
from gradverify.results import Status
from gradverify.target.loading import load_target
from tests.inference import runs

MODULE = "tests.functions.ordered"


def orders(name: str) -> tuple[Order, ...]:
    return read_orders(load_target(f"{MODULE}:{name}"))


def in_order(choices: tuple[Choice, ...], lower: str, upper: str) -> bool:
    by_name = {choice.name: choice for choice in choices}
    return by_name[lower].high < by_name[upper].low


# --- reading the order -------------------------------------------------------------------


def test_a_docstring_states_an_order_with_an_operator_or_in_words() -> None:
    assert orders("BoundedClamp") == (Order("lo", "hi", "the docstring says"),)
    assert orders("WordedWindow") == (Order("lower", "upper", "the docstring says"),)


def test_forward_states_an_order_by_an_assert_or_a_raise() -> None:
    assert orders("AssertedClamp") == (Order("low", "high", "forward asserts"),)
    assert orders("RaisingClamp") == (Order("min_val", "max_val", "forward raises otherwise"),)
    # `assert (hi - lo > 0).all()` and `if lo.ge(hi).any(): raise` say it once
    assert [(o.lower, o.upper) for o in orders("DifferenceChecked")] == [("lo", "hi")]


def test_of_a_chain_in_a_docstring_only_its_ends_are_ordered() -> None:
    # `lo <= x <= hi` says where x lies, not that every x must: lo <= hi only
    assert orders("ChainDocumented") == (Order("lo", "hi", "the docstring says"),)


def test_a_comparison_a_docstring_states_as_a_condition_is_no_order() -> None:
    assert orders("ConditionOnly") == ()  # "where a < b": a region the values may fall in
    clipped = load_target("gradverify.examples.buggy:ClippedReLUForgotMask")
    assert read_orders(clipped) == ()  # "wherever x > clip_val"


# --- inputs that keep it ------------------------------------------------------------------


def test_the_base_case_draws_an_ordered_pair_from_disjoint_ranges_and_says_why() -> None:
    chosen = runs.chosen(f"{MODULE}:BoundedClamp")

    assert (chosen["lo"].low, chosen["lo"].high) == (-1.0, -0.1)
    assert (chosen["hi"].low, chosen["hi"].high) == (0.1, 1.0)
    assert chosen["lo"].reason == "lo < hi, as the docstring says"
    assert (chosen["x"].low, chosen["x"].high) == (-1.0, 1.0)  # x reaches every region


def test_no_case_moves_one_of_an_ordered_pair_of_numbers_past_the_other() -> None:
    inference = runs.inferred(f"{MODULE}:ClampNumbers")

    for _, choices in inference.cases:
        by_name = {choice.name: choice.value for choice in choices}
        assert by_name["lo"] < by_name["hi"]  # never lo=2.5 past hi=0.5


def test_both_sides_of_the_bounds_move_the_clamped_tensor_never_a_bound() -> None:
    inference = runs.inferred(f"{MODULE}:BoundedClamp")

    assert [label for label, _ in inference.extra] == ["x in [2, 3]", "x in [-3, -2]"]
    assert all(in_order(choices, "lo", "hi") for _, choices in inference.cases)


def test_an_asserted_order_is_kept_by_every_case() -> None:
    inference = runs.inferred(f"{MODULE}:AssertedClamp")

    assert inference.ran
    assert "values in [2, 3]" in [label for label, _ in inference.extra]
    assert all(in_order(choices, "low", "high") for _, choices in inference.cases)


def test_a_right_clamp_with_ordered_bounds_passes_zero_config() -> None:
    for name in ("BoundedClamp", "AssertedClamp", "RaisingClamp"):
        report = runs.zero_config(f"{MODULE}:{name}")
        assert report.passed, (name, runs.failed_cases(report))
        assert report.summary.cases == 3


def test_a_gradient_to_the_lower_bound_above_the_upper_one_still_fails() -> None:
    report = runs.zero_config(f"{MODULE}:BoundedClampLowGetsAbove")

    failed = [r for r in report.results if r.status is Status.FAIL]
    assert {r.input_name for r in failed if r.check == "finite_difference"} == {"lo"}
    assert "inferred: x in [2, 3]" in runs.failed_cases(report)


def test_the_init_spec_keeps_the_order_says_why_and_passes(run_spec, find) -> None:
    inference = runs.inferred(f"{MODULE}:BoundedClamp")
    text = spec_text(inference)

    assert "# lo: a tensor (lo < hi, as the docstring says)" in text
    report = run_spec(text)
    assert not find(report, status="fail")
    assert report.summary.cases == 3


# --- explored draws -----------------------------------------------------------------------

RESCALE = f"""
target: {MODULE}:RescaleBetween
explore: 30
cases:
  - name: close bounds
    inputs:
      - {{shape: [8], low: 0.3, high: 0.8}}
      - 0.5
      - 0.55
"""


def test_explored_numbers_that_break_the_order_are_failed_draws(run_spec, find) -> None:
    report = run_spec(RESCALE, seed=0)

    assert not find(report, status="fail"), [r.message for r in find(report, status="fail")]
    explored = [r.explored for r in find(report, check="finite_difference") if r.explored]
    assert explored and explored[0].draws == 30 and not explored[0].found


# --- a spec's case that breaks it ---------------------------------------------------------

BROKEN = f"""
target: {MODULE}:BoundedClamp
cases:
  - name: lo above hi
    inputs:
      - {{shape: [4, 3]}}
      - {{shape: [3], low: 2.0, high: 3.0}}
      - {{shape: [3], low: 0.1, high: 1.0}}
"""


def test_a_failure_on_a_spec_case_that_breaks_the_order_says_so(run_spec, find) -> None:
    report = run_spec(BROKEN)

    failed = find(report, status="fail")  # the user's case is judged as it is
    assert failed
    note = (
        "this case draws lo from [2, 3], not below hi from [0.1, 1], though lo < hi, as the "
        "docstring says: a case outside the Function's contract; fix or delete it"
    )
    assert all(note in result.notes for result in failed)
