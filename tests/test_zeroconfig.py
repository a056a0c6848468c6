"""Zero-config: inputs inferred (gradverify.inference.from_signature) for a target without a spec, run and
cached like any case; the same inference and file name as `init`."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from gradverify.inference import zeroconfig
from gradverify.inference.choice import NUMBER, TENSOR, Choice
from gradverify.inference.from_signature import infer
from gradverify.inference.search import guesses as search
from gradverify.inference.spec_text import file_name
from gradverify.inference.zeroconfig import InferenceError, infer_entry
from gradverify.results import Report, Status
from gradverify.run import session
from gradverify.run.session import RunOptions
from gradverify.spec import LiteralInput, TensorInput, parse_spec
from gradverify.spec.source_files import target_source_files
from gradverify.target.loaded import Target
from gradverify.target.loading import load_target

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = "tests.functions.tutorials"
# Every tutorial Function whose backward is the derivative: zero-config must pass on each.
DERIVATIVES = [
    "LegendrePolynomial3", "MyReLU", "LinearFunction", "LinearSetupContext", "MulConstant",
    "ClippedReLU", "SwishFunction", "LearnableSwish", "LogSumExp",
]  # fmt: skip


def inference_error(target: Target) -> str:
    with pytest.raises(InferenceError) as caught:
        infer_entry(target)
    return str(caught.value)


def suggested_spec(message: str) -> str:
    """The YAML the message suggests: from `target:` up to the `then run` line."""
    start = message.index("\ntarget:") + 1
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
                if x.dim() not in (5,):  # a test inference does not read (`!= 5` it would)
                    raise ValueError("expected an NCDHW input")
                return x

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output, None, None, None, None


        class Picky(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale=None):
                if x.shape != (5, 7):
                    raise ValueError(f"x must be 5x7, got {tuple(x.shape)}")
                return x.clone()

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output, None


        class ForgetsB(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b

            @staticmethod
            def backward(ctx, grad_output):
                a, b = ctx.saved_tensors
                return grad_output * b, None


        class WrongShape(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad_output):
                return (grad_output * 2).sum()


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


def choices(target: str) -> dict[str, Choice]:
    return {choice.name: choice for choice in infer(load_target(target)).choices}


def zero_config(target: str) -> tuple[Report, str]:
    """The zero-config run of `target`, in this process and without the cache."""
    entry, note = infer_entry(load_target(target))
    return session.run([entry], RunOptions(isolation=False, cache=False), [note]), note


def failures(report: Report) -> list[tuple[str, str]]:
    return [(r.check, r.message) for r in report.results if r.status is Status.FAIL]


@pytest.mark.parametrize("name", DERIVATIVES)
def test_every_tutorial_function_passes_zero_config(name: str) -> None:
    report, _ = zero_config(f"{TUTORIALS}:{name}")

    assert failures(report) == []
    assert {"forward", "backward", "finite_difference", "gradcheck"} <= {
        r.check for r in report.results if r.status is Status.PASS
    }


def test_a_gradient_router_is_a_surrogate_by_its_construction() -> None:
    # ReplaceGrad's forward returns x_forward as it is and never reads x_backward's values:
    # whatever backward hands either is deliberate (gradverify.engine.intent), argument by
    # argument, and the pass names why.
    report, note = zero_config(f"{TUTORIALS}:ReplaceGrad")

    assert "x_forward: a float64 tensor [4], x_backward: a float64 tensor [4]" in note
    assert not failures(report)
    said = {r.input_name: r.surrogate for r in report.results if r.surrogate}
    assert "forward returns x_forward unchanged" in said["x_forward"]
    assert "does not depend on x_backward" in said["x_backward"]


def test_a_clamp_whose_gradient_pushes_back_is_a_surrogate_where_inputs_pass_its_bounds() -> None:
    # ClampWithGrad's backward is the derivative inside [min, max] only: past the bounds it
    # passes the gradient that pushes back inside, on purpose. The inferred bounds lie inside
    # the inputs' range, so exact mode reaches that part, and fails only on the elements
    # past a bound.
    report, _ = zero_config(f"{TUTORIALS}:ClampWithGrad")

    failed = [r for r in report.results if r.status is Status.FAIL]
    # backward: its gradient depends on grad_output's sign, so it is not linear in it
    assert failed and {r.check for r in failed} <= {"finite_difference", "gradcheck", "backward"}
    assert all("argument 0 (input)" in r.message for r in failed)
    assert all("gradient: surrogate" in r.hint or "where input" in r.hint for r in failed)


@pytest.mark.parametrize(
    ("name", "parameter", "value"),
    [("SwishFunction", "beta", 0.5), ("ClippedReLU", "clip_val", 0.5), ("LogSumExp", "dim", -1),
     ("MulConstant", "constant", 0.5), ("ClampWithGrad", "min", -0.5), ("ClampWithGrad", "max", 0.5)],
)  # fmt: skip
def test_parameters_used_as_numbers_become_numbers(name: str, parameter: str, value: float) -> None:
    chosen = choices(f"{TUTORIALS}:{name}")[parameter]

    assert (chosen.kind, chosen.value) == (NUMBER, value)


def test_a_scalar_with_a_0d_gradient_becomes_a_0d_tensor() -> None:
    beta = choices(f"{TUTORIALS}:LearnableSwish")["beta"]

    assert (beta.kind, beta.shape) == (TENSOR, ())
    assert beta.reason == "backward's gradient is 0-d"


def test_an_annotated_scalar_tensor_becomes_0d_when_backward_needs_it() -> None:
    beta = choices("gradverify.examples.swish:Swish")["beta"]

    assert (beta.kind, beta.shape) == (TENSOR, ())


@pytest.mark.parametrize(
    ("target", "shapes"),
    [(f"{TUTORIALS}:LegendrePolynomial3", {"input": (4,)}),
     (f"{TUTORIALS}:ReplaceGrad", {"x_forward": (4,), "x_backward": (4,)}),
     ("tests.functions.correct:Mul", {"a": (4,), "b": (4,)}),
     ("tests.functions.correct:MatMul", {"a": (3, 3), "b": (3, 3)}),
     (f"{TUTORIALS}:LinearSetupContext", {"input": (2, 4), "weight": (3, 4), "bias": (3,)})],
)  # fmt: skip
def test_tensor_only_functions_keep_tensors(
    target: str, shapes: dict[str, tuple[int, ...]]
) -> None:
    chosen = choices(target)

    assert {name: c.shape for name, c in chosen.items() if c.kind == TENSOR} == shapes
    assert all(c.kind == TENSOR for c in chosen.values())


def test_linear_is_inferred_where_the_elementwise_guess_fails() -> None:
    chosen = choices(f"{TUTORIALS}:LinearFunction")

    assert [chosen["input"].shape, chosen["weight"].shape] == [(2, 4), (3, 4)]
    assert chosen["bias"].value is None  # forward's default, kept


@pytest.mark.parametrize("name", [*DERIVATIVES, "ReplaceGrad"])
def test_inference_takes_few_probes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    probes: list[object] = []
    real = search.probe
    monkeypatch.setattr(search, "probe", lambda *a: probes.append(a) or real(*a))

    infer(load_target(f"{TUTORIALS}:{name}"))

    assert 1 <= len(probes) <= 4


def test_a_gradient_bug_on_a_tensor_saved_for_backward_is_not_inferred_away(
    user_module: str,
) -> None:
    # backward forgets b's gradient; b is saved for backward, so it cannot be a number, stays
    # a tensor, and the check finds the missing gradient.
    report, note = zero_config(f"{user_module}:ForgetsB")

    assert "b: a float64 tensor [4]" in note
    assert "finite_difference" in {check for check, _ in failures(report)}


def test_a_wrong_gradient_shape_is_run_and_reported_not_guessed_away(user_module: str) -> None:
    entry, note = infer_entry(load_target(f"{user_module}:WrongShape"))
    report = session.run([entry], RunOptions(isolation=False, cache=False))

    assert entry.spec.cases[0].inputs == [TensorInput(shape=[4])]
    assert "backward did not run well on any guess" in note
    assert "backward" in {check for check, _ in failures(report)}


def test_inferred_case_has_float64_vectors_for_parameters_without_defaults() -> None:
    entry, _ = infer_entry(load_target("tests.functions.correct:Mul"))

    case = entry.spec.cases[0]  # the base case; other shapes follow
    assert case.name == "inferred"
    assert case.inputs == [TensorInput(shape=[4]), TensorInput(shape=[4])]
    assert all(item.dtype == "float64" and item.wants_grad for item in case.inputs)
    assert entry.spec.target == "tests.functions.correct:Mul"
    assert entry.file is None
    assert entry.case_lines == {}


def test_defaults_become_literals() -> None:
    entry, _ = infer_entry(load_target("gradverify.examples.activations:ClippedReLU"))

    assert entry.spec.cases[0].inputs == [TensorInput(shape=[4]), 6.0]


def test_new_style_function_is_inferred_without_ctx() -> None:
    entry, _ = infer_entry(load_target("tests.functions.correct:SetupContextSquare"))

    assert entry.spec.cases[0].inputs == [TensorInput(shape=[4])]


def test_inferred_spec_keeps_the_default_checks_and_tolerances() -> None:
    entry, _ = infer_entry(load_target("tests.functions.correct:Square"))

    assert entry.spec.checks is None  # every check that applies
    assert {"forward", "backward", "finite_difference", "gradcheck", "gradgradcheck"} <= set(
        entry.spec.checks_for(custom_op=False)
    )
    assert entry.spec.seed == 0


def test_note_says_what_was_inferred_and_why() -> None:
    _, note = infer_entry(load_target(f"{TUTORIALS}:ClippedReLU"))

    assert f"no spec names {TUTORIALS}:ClippedReLU" in note
    assert "input: a float64 tensor [4]" in note
    assert "clip_val: the number 0.5 (forward uses it as one)" in note
    assert (
        f"`gradverify init {TUTORIALS}:ClippedReLU` writes them to specs/clipped_relu.yaml" in note
    )


def test_note_names_forward_defaults() -> None:
    _, note = infer_entry(load_target("gradverify.examples.activations:ClippedReLU"))

    assert "clip_val=6.0 (forward's default)" in note


def test_function_without_arguments(user_module: str) -> None:
    entry, note = infer_entry(load_target(f"{user_module}:NoArguments"))

    assert entry.spec.cases[0].inputs == []
    assert "no arguments" in note


def test_rejected_inputs_raise_with_a_spec_to_write(user_module: str) -> None:
    message = inference_error(load_target(f"{user_module}:Picky"))

    assert message.startswith(f"cannot infer inputs for {user_module}:Picky")
    assert "ValueError: x must be 5x7" in message
    assert "specs/picky.yaml" in message
    assert f"`gradverify init {user_module}:Picky` writes it" in message
    assert f"target: {user_module}:Picky\ncases:\n" in message
    assert "# x: a tensor (forward rejected every shape tried: choose its shape)" in message


def test_suggested_spec_is_a_valid_spec_for_the_target(user_module: str) -> None:
    message = inference_error(load_target(f"{user_module}:Picky"))

    (entry,) = parse_spec(suggested_spec(message), "suggested.yaml")

    assert entry.spec.target == f"{user_module}:Picky"
    assert [type(item) for item in entry.spec.cases[0].inputs] == [TensorInput, type(None)]


def test_suggested_spec_keeps_the_defaults_as_they_are(user_module: str) -> None:
    message = inference_error(load_target(f"{user_module}:Pool"))

    assert "ValueError: expected an NCDHW input" in message
    assert "specs/pool.yaml" in message
    (entry,) = parse_spec(suggested_spec(message), "suggested.yaml")
    assert entry.spec.cases[0].inputs[1:] == [
        [2, 2],
        "it's",
        LiteralInput(value={"a": 1}),
        True,
    ]


@pytest.mark.parametrize(
    ("attr", "name"),
    [("ClippedReLU", "clipped_relu"), ("MyReLU", "my_relu"), ("LinearFunction", "linear_function"),
     ("SwishFunction", "swish_function"), ("LogSumExp", "log_sum_exp"), ("ReLU", "relu"),
     ("SumDim", "sum_dim"), ("ReLUFunction", "relu_function"), ("FusedBiasGELU", "fused_bias_gelu"),
     ("SiLU", "silu"), ("LegendrePolynomial3", "legendre_polynomial3"), ("Outer.MyLSTMCell", "my_lstm_cell"),
     ("ClampNoMaskA", "clamp_no_mask_a"), ("LayerNormOD", "layer_norm_od"), ("PReLU", "prelu"),
     ("SoftmaxWithLSEOk", "softmax_with_lse_ok"), ("LayerNormODFn", "layer_norm_od_fn"), ("GeLU", "gelu")],
)  # fmt: skip
def test_file_name_rule(attr: str, name: str) -> None:
    assert file_name(f"pkg.mod:{attr}") == f"{name}.yaml"


def test_check_and_init_name_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    target = f"{TUTORIALS}:ClippedReLU"
    checked = CliRunner().invoke(app, ["check", target, "--no-isolation", "--no-cache"])
    initialised = CliRunner().invoke(app, ["init", target, "--no-isolation"])

    assert checked.exit_code == ExitCode.OK, checked.output
    assert initialised.exit_code == ExitCode.OK, initialised.output
    assert "specs/clipped_relu.yaml" in checked.stdout
    assert Path("specs/clipped_relu.yaml").is_file()


# --- the cache ----------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A project directory holding a copy of the tutorials, as the working directory."""
    name = f"gvtut_{tmp_path.name[-12:].replace('-', '_')}"
    source = (ROOT / "tests" / "functions" / "tutorials.py").read_text(encoding="utf-8")
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def json_check(target: str) -> dict:
    import json

    result = CliRunner().invoke(app, ["check", target, "--no-isolation", "--format", "json"])
    assert result.exit_code == ExitCode.OK, result.output
    return json.loads(result.stdout)


def test_zero_config_results_are_cached(project: str, monkeypatch: pytest.MonkeyPatch) -> None:
    first = json_check(f"{project}:SwishFunction")
    assert not any(r["cached"] for r in first["results"])

    def no_inference(target: Target) -> None:
        raise AssertionError("inferred again although the source did not change")

    monkeypatch.setattr(zeroconfig, "infer", no_inference)
    second = json_check(f"{project}:SwishFunction")

    assert second["results"] and all(r["cached"] for r in second["results"])
    assert second["notes"] == first["notes"]  # the note says what was inferred, cached or not


def test_a_changed_source_is_inferred_and_run_again(project: str) -> None:
    json_check(f"{project}:SwishFunction")
    module = Path(f"{project}.py")
    source = module.read_text(encoding="utf-8")  # the Function's own code, not a comment
    edited = source.replace("        beta = ctx.beta\n", "        beta = float(ctx.beta)\n")
    assert edited != source
    module.write_text(edited, encoding="utf-8")

    again = json_check(f"{project}:SwishFunction")

    assert not any(r["cached"] for r in again["results"])


def test_an_installed_target_has_sources_to_key_on(tmp_path: Path) -> None:
    # gradverify's examples are outside tmp_path: found on sys.path, own package only.
    files = target_source_files("gradverify.examples.swish:Swish", tmp_path)

    assert ROOT / "gradverify" / "examples" / "swish.py" in files
    assert all(ROOT / "gradverify" in file.parents for file in files)
