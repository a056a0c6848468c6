"""Generated inputs are kept off kinks; explicit values never change."""

from __future__ import annotations

import pytest


def test_values_near_a_kink_are_drawn_again_and_the_report_says_so(run_spec):
    report = run_spec(
        """
        target: gradverify.examples.activations:ReLU
        checks: [finite_difference, gradcheck]
        cases:
          - name: tight
            inputs: [{shape: [40], low: -1.0e-5, high: 1.0e-5}]
        """
    )
    assert [r.status.value for r in report.results] == ["pass", "pass"]
    (note,) = report.notes
    assert "re-drew" in note and "argument 0 (x)" in note and "tight" in note


def test_explicit_values_at_a_kink_are_kept(run_spec):
    report = run_spec(
        """
        target: gradverify.examples.activations:ReLU
        checks: [finite_difference]
        cases:
          - name: at_zero
            inputs: [{values: [0.0, 1.0]}]
        """
    )
    assert report.notes == ()
    assert report.results[0].status.value == "warn"


def test_known_kinks_keep_generated_values_away():
    from gradverify.inputs import build_inputs
    from gradverify.spec.models import Case, TensorInput

    case = Case(name="c", inputs=[TensorInput(shape=[2000], low=-1e-3, high=1e-3)])
    plain = build_inputs(case, seed=0)[0]
    kept = build_inputs(case, seed=0, kinks=[0.0], margin=1e-5)[0]
    assert (plain.abs() < 1e-5).any()  # without the key, some land next to the kink
    assert (kept.abs() >= 1e-5).all()
    untouched = plain.abs() >= 1e-5
    assert kept[untouched].equal(plain[untouched])


def test_the_kinks_key_is_read_from_the_spec():
    from gradverify.spec.load import parse_spec

    (entry,) = parse_spec("target: a:B\nkinks: [0.0, 2.0]\ncases: [{name: x}]\n", "s.yaml")
    assert entry.spec.kinks == [0.0, 2.0]


@pytest.mark.parametrize("gradient", ["surrogate", "approximate"])
def test_inputs_are_not_settled_outside_exact_mode(run_spec, gradient):
    report = run_spec(
        f"""
        target: gradverify.examples.activations:ReLU
        gradient: {gradient}
        checks: [forward]
        cases:
          - name: tight
            inputs: [{{shape: [40], low: -1.0e-5, high: 1.0e-5}}]
        """
    )
    assert report.notes == ()
