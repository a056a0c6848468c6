"""infer_entry: a one-case spec from forward's signature, or a spec to copy when that fails."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from gradverify.spec import LiteralInput, TensorInput, parse_spec
from gradverify.target import Target, load_target
from gradverify.zeroconfig import InferenceError, infer_entry


def inference_error(target: Target) -> str:
    with pytest.raises(InferenceError) as caught:
        infer_entry(target)
    return str(caught.value)


def suggested_spec(message: str) -> str:
    """The YAML the message suggests: from `target:` up to the `then run` line."""
    start = message.index("target:")
    return message[start : message.index("then run", start)]


@pytest.fixture
def user_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[str]:
    """A module of Functions with awkward defaults, under a name unique to the test."""
    name = "gvzero_" + "".join(c if c.isalnum() else "_" for c in request.node.name)
    source = """\
        import torch


        class Pool(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, kernel=(2, 2), mode="it's", options={"a": 1}, flag=True):
                if x.dim() != 4:
                    raise ValueError("expected an NCHW input")
                return x

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output, None, None, None, None


        class NoArguments(torch.autograd.Function):
            @staticmethod
            def forward(ctx):
                return torch.zeros(1)

            @staticmethod
            def backward(ctx):
                return ()
        """
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_inferred_case_has_float64_vectors_for_parameters_without_defaults() -> None:
    entry, _ = infer_entry(load_target("tests.functions.correct:Mul"))

    (case,) = entry.spec.cases
    assert case.name == "inferred"
    assert case.inputs == [TensorInput(shape=[4]), TensorInput(shape=[4])]
    assert all(item.dtype == "float64" and item.wants_grad for item in case.inputs)
    assert entry.spec.target == "tests.functions.correct:Mul"
    assert entry.file is None
    assert entry.case_lines == {}


def test_defaults_become_literals() -> None:
    entry, _ = infer_entry(load_target("gradverify.examples.activations:ClippedReLU"))

    assert entry.spec.cases[0].inputs == [TensorInput(shape=[4]), LiteralInput(value=6.0)]


def test_new_style_function_is_inferred_without_ctx() -> None:
    entry, _ = infer_entry(load_target("tests.functions.correct:SetupContextSquare"))

    assert entry.spec.cases[0].inputs == [TensorInput(shape=[4])]


def test_inferred_spec_keeps_the_default_checks_and_tolerances() -> None:
    entry, _ = infer_entry(load_target("tests.functions.correct:Square"))

    assert entry.spec.checks is None  # every check that applies
    assert {"forward", "backward", "finite_difference", "gradcheck", "gradgradcheck"} <= set(
        entry.spec.selected_checks
    )
    assert entry.spec.seed == 0


def test_note_says_the_inputs_were_inferred() -> None:
    _, note = infer_entry(load_target("gradverify.examples.activations:ClippedReLU"))

    assert "gradverify.examples.activations:ClippedReLU" in note
    assert "inferred from forward's signature" in note
    assert "x: float64 tensor [4]" in note
    assert "clip_val=6.0" in note


def test_function_without_arguments(user_module: str) -> None:
    entry, note = infer_entry(load_target(f"{user_module}:NoArguments"))

    assert entry.spec.cases[0].inputs == []
    assert "no arguments" in note


def test_rejected_inputs_raise_with_a_spec_to_write() -> None:
    message = inference_error(load_target("gradverify.examples.linear:Linear"))

    assert message.startswith("cannot infer inputs for gradverify.examples.linear:Linear")
    assert "RuntimeError" in message
    assert "specs/linear.yaml" in message
    assert "target: gradverify.examples.linear:Linear\ncases:\n" in message


def test_suggested_spec_is_a_valid_spec_for_the_target() -> None:
    message = inference_error(load_target("gradverify.examples.linear:Linear"))

    (entry,) = parse_spec(suggested_spec(message), "suggested.yaml")

    assert entry.spec.target == "gradverify.examples.linear:Linear"
    inputs = entry.spec.cases[0].inputs
    assert [type(item) for item in inputs[:2]] == [TensorInput, TensorInput]
    assert inputs[2] is None  # bias=None, as forward's default


def test_suggested_spec_keeps_the_defaults_as_they_are(user_module: str) -> None:
    message = inference_error(load_target(f"{user_module}:Pool"))

    assert "ValueError: expected an NCHW input" in message
    assert "specs/pool.yaml" in message
    (entry,) = parse_spec(suggested_spec(message), "suggested.yaml")
    assert entry.spec.cases[0].inputs[1:] == [
        [2, 2],
        "it's",
        LiteralInput(value={"a": 1}),
        True,
    ]


def test_file_name_of_a_camel_case_target_is_snake_case() -> None:
    message = inference_error(load_target("tests.functions.correct:SumDim"))

    assert "specs/sum_dim.yaml" in message
    assert "gradverify check specs/sum_dim.yaml" in message
