"""The `vmap` check: torch.vmap over a batch against a loop over the same inputs."""

from __future__ import annotations

import pytest
import torch

from gradverify.checks.vmap import BATCH, NO_VMAP, NOT_A_FUNCTION, RANDOM
from gradverify.inputs import build_inputs, case_seed
from gradverify.spec.models import Case

FORWARD_MODE = "tests.functions.forward_mode"
CHECK = "vmap"


def run_one(run_spec, name, inputs, seed=None):
    """Run the vmap check on one case of tests.functions.forward_mode:<name>; the Report."""
    return run_spec(
        f"""
        target: {FORWARD_MODE}:{name}
        checks: [vmap]
        cases: [{{name: case, inputs: {inputs}}}]
        """,
        seed=seed,
    )


@pytest.mark.parametrize("seed", range(3))
def test_correct_vmap_rules_pass_with_their_gradients(run_spec, find, seed):
    report = run_spec(
        f"""
        functions:
          - target: {FORWARD_MODE}:SquareGeneratedVmap
            checks: [vmap]
            cases:
              - {{name: matrix, inputs: [{{shape: [2, 3]}}]}}
              - {{name: scalar, inputs: [{{shape: []}}]}}
              - {{name: float32, inputs: [{{shape: [4], dtype: float32}}]}}
          - target: {FORWARD_MODE}:SumDimVmap
            checks: [vmap]
            cases:
              - {{name: rows, inputs: [{{shape: [3, 4]}}, 0]}}
              - {{name: last_of_three, inputs: [{{shape: [2, 3, 2]}}, -1]}}
              - {{name: constant, inputs: [{{shape: [3, 3], requires_grad: false}}, 1]}}
        """,
        seed=seed,
    )
    results = find(report, check=CHECK)
    assert len(results) == 6
    assert all(r.status.value == "pass" for r in results), [r.message for r in results]
    assert all(f"batch of {BATCH}" in r.message for r in results)
    with_gradients = [r for r in results if "gradients of 1 argument(s)" in r.message]
    assert [r.case for r in with_gradients] == [
        "matrix",
        "scalar",
        "float32",
        "rows",
        "last_of_three",
    ]
    assert "no gradient to compare" in results[-1].message


def test_dim_not_shifted_past_the_batch_is_caught_with_the_values(run_spec, only):
    report = run_one(run_spec, "SumDimVmapForgotShift", "[{shape: [3, 4]}, 0]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.output_index == 0
    assert result.input_index is None
    entry, column = result.element
    assert f"batch entry {entry}, element [{column}]" in result.message
    assert (result.mismatched, result.total) == (12, 12)
    # The batch holds the case's arguments and two more seeded draws of the same case.
    case = Case(name="case", inputs=[{"shape": [3, 4]}, 0])
    draws = [build_inputs(case, 0)[0]]
    draws += [build_inputs(case, case_seed(0, "case") + draw)[0] for draw in (1, 2)]
    batch = torch.stack([x.detach() for x in draws])
    assert result.numerical == pytest.approx(float(batch[entry].sum(0)[column]))  # the loop
    assert result.analytical == pytest.approx(
        float(batch.sum(0)[entry, column])
    )  # the batch summed
    assert "dim argument not shifted past the batch dimension" in result.hint


def test_dim_not_shifted_can_also_change_the_shape(run_spec, only):
    report = run_one(run_spec, "SumDimVmapForgotShift", "[{shape: [3, 4]}, 1]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert "output 0 under torch.vmap has shape [3, 4], the loop gives [3, 3]" in result.message
    assert "reduces over it" in result.hint


def test_dim_not_shifted_is_harmless_for_the_last_dim(run_spec, only):
    report = run_one(run_spec, "SumDimVmapForgotShift", "[{shape: [3, 4]}, -1]")
    assert only(report, check=CHECK).status.value == "pass"


def test_wrong_out_dims_with_a_square_result_puts_values_in_the_wrong_places(run_spec, only):
    report = run_one(run_spec, "ExpVmapWrongOutDims", "[{shape: [3]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.output_index == 0
    assert result.mismatched == 6  # a transposed 3 x 3 batch: the diagonal is right
    assert "wrong places" in result.hint
    assert "out_dims" in result.hint


def test_wrong_out_dims_with_another_shape_names_both_shapes(run_spec, only):
    report = run_one(run_spec, "ExpVmapWrongOutDims", "[{shape: [2]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert "has shape [2, 3], the loop gives [3, 2]" in result.message
    assert "out_dims names the wrong dimension" in result.hint


def test_wrong_gradient_of_the_batched_path_names_the_argument(run_spec, only):
    report = run_one(run_spec, "SquareVmapWrongBatchedBackward", "[{shape: [4]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (0, "x")
    assert "gradient of argument 0 (x) under torch.vmap differs" in result.message
    assert result.analytical == pytest.approx(result.numerical / 2)
    assert len(result.element) == 2  # batch entry, element
    assert "outputs under vmap are right but their gradient is not" in result.hint


def test_generated_rule_with_a_ctx_forward_fails_naming_vmap(run_spec, only):
    report = run_one(run_spec, "GeneratedVmapWithCtxForward", "[{shape: [4]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "fail"
    assert result.message.startswith("vmap raised RuntimeError")
    assert "setup_context" in result.hint


def test_random_forward_is_skipped(run_spec, only):
    report = run_one(run_spec, "NoisyGeneratedVmap", "[{shape: [4]}]")
    result = only(report, check=CHECK)
    assert (result.status.value, result.message) == ("skip", RANDOM)


def test_explicit_values_repeat_across_the_batch_with_a_note(run_spec, only):
    report = run_one(run_spec, "SquareGeneratedVmap", "[{values: [1.0, 2.0]}]")
    result = only(report, check=CHECK)
    assert result.status.value == "pass"
    assert any("batch entries are identical" in note for note in result.notes)


def test_functions_without_a_vmap_rule_and_plain_callables_are_skipped(run_spec, find):
    report = run_spec(
        f"""
        functions:
          - target: tests.functions.correct:SetupContextSquare
            checks: [vmap]
            cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
          - target: {FORWARD_MODE}:SquareWithJvp
            checks: [vmap]
            cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
          - target: {FORWARD_MODE}:plain_square
            checks: [vmap]
            cases: [{{name: vector, inputs: [{{shape: [4]}}]}}]
        """
    )
    assert [(r.status.value, r.message) for r in find(report, check=CHECK)] == [
        ("skip", NO_VMAP),
        ("skip", NO_VMAP),
        ("skip", NOT_A_FUNCTION),
    ]
