"""torch.library custom ops as targets: the forms they are written in, names and types from
the op's schema, the registered backward's line, inference, and every check on them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
import warnings
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from gradverify import authoring
from gradverify.api import verify
from gradverify.checks.jvp import NO_OP_JVP
from gradverify.checks.vmap import NO_OP_VMAP
from gradverify.cli import app
from gradverify.errors import SpecError, TargetError
from gradverify.exitcodes import ExitCode
from gradverify.inference.from_signature import infer
from gradverify.inference.zeroconfig import infer_entry
from gradverify.results import Status
from gradverify.spec import parse_spec
from gradverify.spec.changed_files import specs_depending_on
from gradverify.spec.models import CHECK_IDS
from gradverify.spec.source_files import target_source_files
from gradverify.spec.targets import TargetForm, module_of, parse_target
from gradverify.target.loading import load_target, target_of
from tests.functions import custom_ops

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = "tests.functions.custom_ops"
FIXTURE_FILE = ROOT / "tests" / "functions" / "custom_ops.py"
EXAMPLES = "gradverify.examples.custom_ops"
# Every check that runs without a spec key of its own.
CHECKS = [c for c in CHECK_IDS if c not in {"reference", "expected_gradient"}]


def line_of(text: str, file: Path = FIXTURE_FILE) -> int:
    """The line number of the first line of `file` that starts with `text`."""
    lines = file.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.startswith(text))


# --- the forms ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "form"),
    [
        ("pkg.ops:Square", TargetForm("pkg.ops", "Square")),
        ("pkg.ops:mylib::mysin", TargetForm("pkg.ops", None, "mylib::mysin")),
        ("op:mylib::mysin", TargetForm(None, None, "mylib::mysin")),
        ("op:aten::add.Tensor", TargetForm(None, None, "aten::add.Tensor")),
        ("src/ops.py:mylib::mysin", TargetForm("src/ops.py", None, "mylib::mysin")),
        ("C:/src/ops.py:mylib::mysin", TargetForm("C:/src/ops.py", None, "mylib::mysin")),
        ("mylib::mysin", None),
        ("pkg.ops:", None),
    ],
)
def test_target_forms_are_read_without_importing(spec, form):
    assert parse_target(spec) == form


def test_the_module_of_an_op_target_is_the_one_that_registers_it():
    assert module_of("pkg.ops:mylib::mysin") == "pkg.ops"
    assert module_of("op:mylib::mysin") is None


def test_a_spec_rejects_an_op_name_without_its_module():
    with pytest.raises(SpecError) as caught:
        parse_spec("target: mylib::mysin\ncases: [{name: c, inputs: [{shape: [3]}]}]\n", "s.yaml")
    message = str(caught.value)
    assert "`package.module:ns::name`" in message
    assert "`op:ns::name`" in message


def test_check_help_lists_the_target_forms_and_the_checks_for_ops():
    result = CliRunner().invoke(app, ["check", "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    said = " ".join(result.output.split())
    for form in ("`package.module:Attr`", "`package.module:ns::name`", "`op:ns::name`"):
        assert form in said
    assert "a Function or function" in said
    assert "func (torch.func transforms), opcheck (custom ops) and compile" in said
    assert "opt-in, with --extra-check compile or `extra_checks`; on by default for custom ops" in (
        said
    )


def test_a_spec_accepts_every_op_form():
    for target in ("pkg.ops:mylib::mysin", "op:mylib::mysin", "op:aten::add.Tensor"):
        (entry,) = parse_spec(f"target: '{target}'\ncases: [{{name: c, inputs: [1]}}]\n", "s.yaml")
        assert entry.spec.target == target


# --- loading ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [f"{FIXTURES}:mixed", f"{FIXTURES}:gradverify_tests::mixed", "op:gradverify_tests::mixed"],
)
def test_an_op_is_named_and_typed_by_its_schema(spec):
    target = load_target(spec)
    assert target.op_name == "gradverify_tests::mixed"
    assert target.parameters == ("x", "alpha", "power", "flip", "dims")
    assert target.schema_types == {
        "x": "Tensor", "alpha": "float", "power": "int", "flip": "bool", "dims": "int[]",
    }  # fmt: skip
    assert target.variadic is None
    assert target.obj is custom_ops.mixed  # its CustomOpDef, found by name too
    assert target.op is torch.ops.gradverify_tests.mixed.default  # `call` wraps it


def test_schema_defaults_are_the_targets_defaults():
    target = load_target(f"{FIXTURES}:scale")
    assert target.parameters == ("x", "factor")
    assert target.defaults == {"factor": 2.0}


def test_an_op_target_points_at_its_registered_backward():
    target = load_target(f"{FIXTURES}:gradverify_tests::cube_wrong_backward")
    assert Path(target.source_file or "") == FIXTURE_FILE
    assert target.backward_line == line_of("def _cube_backward")


def test_an_op_torch_defines_is_a_target_with_its_schema_names():
    target = load_target("op:aten::add.Tensor")
    assert target.op_name == "aten::add"
    assert target.parameters == ("self", "other")  # alpha is keyword-only
    assert target.source_file is None


def test_an_op_with_several_overloads_and_no_default_asks_for_one():
    with pytest.raises(TargetError) as caught:
        load_target("op:aten::bitwise_and")
    message = caught.value.message
    assert "op 'aten::bitwise_and' has several overloads: name one of" in message
    assert "`aten::bitwise_and.Tensor`" in message
    assert load_target("op:aten::bitwise_and.Tensor").parameters == ("self", "other")


def test_a_missing_overload_is_named():
    with pytest.raises(TargetError) as caught:
        load_target("op:aten::sum.nonexistent")
    assert "op 'aten::sum' has no overload 'nonexistent'" in caught.value.message


def test_an_unregistered_op_asks_for_the_module_that_defines_it():
    with pytest.raises(TargetError) as caught:
        load_target("op:gradverify_unknown::mysin")
    assert "no op 'gradverify_unknown::mysin' is registered" in caught.value.message
    assert "`package.module:gradverify_unknown::mysin`" in caught.value.message


def test_a_misspelled_op_after_its_module_is_suggested():
    with pytest.raises(TargetError) as caught:
        load_target(f"{EXAMPLES}:gradverify_examples::mysinn")
    message = caught.value.message
    assert f"importing '{EXAMPLES}' registered no op 'gradverify_examples::mysinn'" in message
    assert "did you mean 'gradverify_examples::mysin'" in message


@pytest.mark.parametrize(
    "obj",
    [
        custom_ops.mixed,
        torch.ops.gradverify_tests.mixed,
        torch.ops.gradverify_tests.mixed.default,
    ],
)
def test_op_objects_in_hand_are_targets_named_after_their_module(obj):
    target = target_of(obj)
    assert target.spec == f"{FIXTURES}:gradverify_tests::mixed"
    assert target.parameters[0] == "x"
    assert load_target(target.spec).op_name == target.op_name  # the name loads back


# --- the checks on ops --------------------------------------------------------------------


def test_a_correct_op_passes_every_check_that_applies():
    report = verify(custom_ops.mul, [{"shape": [3, 4]}, {"shape": [3, 4]}], checks=CHECKS)
    assert [r for r in report.results if r.status in (Status.FAIL, Status.WARN)] == []
    passed = {r.check for r in report.results if r.status is Status.PASS}
    assert passed >= {"forward", "backward", "layouts", "finite_difference", "gradcheck"}
    assert passed >= {"gradgradcheck", "opcheck"}
    # This op has no jvp or vmap rule, lint reads Functions' code (and torch.func does not
    # transform custom ops: the `func` check's own tests say how it tells).
    not_applicable = {r.check for r in report.results if not r.applies}
    assert {"lint", "jvp", "vmap"} <= not_applicable <= {"lint", "jvp", "vmap", "func"}
    jvp = next(r for r in report.results if r.check == "jvp")
    assert jvp.message == NO_OP_JVP
    assert jvp.message.startswith("a custom op has no forward-mode AD (jvp) rule unless")


def test_an_op_without_an_autograd_kernel_is_one_finding_and_no_torch_warning(run_spec):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = run_spec(
            f"""
            target: '{FIXTURES}:gradverify_tests::cpu_only_sin'
            cases: [{{name: case, inputs: [{{shape: [4]}}]}}]
            """
        )
    # torch warns from every backward through such an op; opcheck says it once instead.
    assert [str(w.message) for w in caught] == []
    registration = next(r for r in report.results if r.check == "opcheck")
    assert registration.message.startswith(
        "test_autograd_registration fails: the op has no autograd kernel"
    )
    # Its gradient is still checked (autograd differentiates the CPU kernel's own ops).
    assert {r.check for r in report.results if r.status is Status.PASS} >= {
        "backward", "finite_difference", "gradcheck", "gradgradcheck",
    }  # fmt: skip
    assert torch._C._get_autograd_fallback_mode() == "warn"  # torch's mode as it was


def test_no_torch_warning_reaches_the_command_lines_output():
    completed = subprocess.run(
        [sys.executable, "-m", "gradverify", "check",
         f"{FIXTURES}:gradverify_tests::cpu_only_sin", "--no-cache"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert completed.returncode == ExitCode.FAILED, completed.stderr
    assert "test_autograd_registration fails" in completed.stdout
    assert "Warning" not in completed.stderr + completed.stdout


def test_a_declared_mutation_is_passed_a_clone_and_is_no_finding(run_spec):
    target = load_target(f"{FIXTURES}:gradverify_tests::sin_cached")
    assert target.dirty.positions == (1,)  # `cache`, from the schema's Tensor(a!)
    x, cache = torch.rand(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
    assert torch.equal(target.call(x, cache), x.sin())
    assert torch.equal(cache, torch.zeros(3, dtype=torch.float64))  # the caller's, untouched
    report = run_spec(
        f"""
        target: '{FIXTURES}:gradverify_tests::sin_cached'
        cases:
          - name: case
            inputs: [{{shape: [4], requires_grad: false}}, {{shape: [4], requires_grad: false}}]
        """
    )
    assert [r.message for r in report.results if r.status in (Status.FAIL, Status.WARN)] == []
    forward = next(r for r in report.results if r.check == "forward")
    assert forward.status is Status.PASS
    assert forward.notes == (
        "argument 1 (cache) is written in place (declared in the op's mutates_args): every "
        "check passes it as a clone",
    )
    assert next(r for r in report.results if r.check == "opcheck").status is Status.PASS


def test_an_undeclared_mutation_is_still_caught_by_forward(run_spec):
    report = run_spec(
        f"""
        target: '{FIXTURES}:undeclared_mutation'
        checks: [forward]
        cases: [{{name: case, inputs: [{{shape: [4], requires_grad: false}}]}}]
        """
    )
    (forward,) = report.results
    assert forward.status is Status.FAIL
    assert forward.message.startswith("forward modified argument 0 (x) in place")


def test_a_correct_op_with_literals_passes():
    inputs = [{"shape": [2, 3]}, 1.5, 3, True, [0, 1]]
    report = verify(custom_ops.mixed, inputs, checks=CHECKS)
    assert [r.message for r in report.results if r.failed] == []
    gradient = next(r for r in report.results if r.check == "finite_difference")
    assert gradient.status is Status.PASS
    assert gradient.input_name == "x"


def test_vmap_checks_an_ops_registered_vmap_rule():
    report = verify(custom_ops.sin_vmap, [{"shape": [4]}], checks=["vmap"])
    (result,) = report.results
    assert result.status is Status.PASS
    assert "and the gradients of 1 argument(s)" in result.message
    (wrong,) = verify(custom_ops.sin_wrong_vmap, [{"shape": [4]}], checks=["vmap"]).results
    assert wrong.status is Status.FAIL
    assert wrong.message.startswith("output 0 under torch.vmap differs from a loop")
    (none,) = verify(custom_ops.mul, [{"shape": [4]}, {"shape": [4]}], checks=["vmap"]).results
    assert not none.applies
    assert none.message == NO_OP_VMAP


def test_a_wrong_backward_is_caught_at_the_element_and_its_line():
    report = verify(
        load_target(f"{FIXTURES}:gradverify_tests::cube_wrong_backward").obj,
        [{"shape": [4]}],
        checks=["finite_difference", "gradcheck"],
    )
    failures = [r for r in report.results if r.failed]
    assert {r.check for r in failures} == {"finite_difference", "gradcheck"}
    for failure in failures:
        assert failure.input_index == 0
        assert failure.input_name == "x"
        assert "argument 0 (x)" in failure.message
        assert failure.element is not None
        assert failure.analytical == pytest.approx(failure.numerical / 3, rel=1e-4)
        assert Path(failure.source_file or "") == FIXTURE_FILE
        assert failure.source_line == line_of("def _cube_backward")


def test_the_bundled_custom_op_spec(run_spec, find, only):
    report = run_spec(ROOT / "specs" / "custom_ops.yaml")
    results = list(report.results)
    correct = (f"{EXAMPLES}:mysin", f"{EXAMPLES}:gradverify_examples::scaled_pow")
    assert [
        r for r in results if r.target in correct and r.status is not Status.PASS and r.applies
    ] == []
    wrong = f"{EXAMPLES}:gradverify_examples::mysin_wrong_backward"
    gradient = only(report, target=wrong, check="finite_difference", status="fail")
    assert gradient.input_name == "x"
    assert gradient.source_line == line_of(
        "def _wrong_backward", ROOT / "gradverify/examples/custom_ops.py"
    )
    assert find(report, target=wrong, check="opcheck", status="pass")  # opcheck cannot see it
    fake = [r for r in results if r.target == f"{EXAMPLES}:row_sum_wrong_fake" and r.failed]
    assert [r.check for r in fake] == ["opcheck"]  # AOT dispatch's failure is its note
    assert fake[0].message == (
        "test_faketensor fails: register_fake returns shape [3, 4] where the op returns [3]"
    )


# --- inference ----------------------------------------------------------------------------


def test_zero_config_infers_an_ops_inputs_from_its_schema():
    entry, note = infer_entry(load_target(f"{FIXTURES}:gradverify_tests::mixed"))
    case = entry.spec.cases[0]  # the base case; more cases follow (other ranks)
    assert case.inputs[1:] == [0.5, 1, True, [-1]]
    assert case.inputs[0].shape == [4]
    assert "dims: the list [-1] (int[], no default: choose a value)" in note


def test_zero_config_checks_an_op_from_the_command_line(in_repo):
    target = f"{FIXTURES}:gradverify_tests::cube_wrong_backward"
    command = ["check", target, "--no-isolation", "--no-cache", "--format", "json"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == ExitCode.FAILED, result.output
    report = json.loads(result.stdout)
    failed = [r for r in report["results"] if r["status"] == "fail"]
    assert {r["check"] for r in failed} == {"finite_difference", "gradcheck"}
    assert {(r["input_name"], r["source_line"]) for r in failed} == {
        ("x", line_of("def _cube_backward"))
    }
    assert "x: a float64 tensor [4] (Tensor in the op's schema)" in report["notes"][0]


def test_zero_config_catches_a_forgotten_float_factor():
    # a float argument inferred as 1.0 would make `grad * cos(x)` right by accident
    target = load_target(f"{FIXTURES}:gradverify_tests::scale_forgotten")
    inference = infer(target)
    assert [(c.name, c.value) for c in inference.choices][1] == ("factor", 0.5)
    report = verify(target.obj, inference.inputs(), checks=["finite_difference"])
    (result,) = report.results
    assert result.status.value == "fail"
    assert result.input_name == "x"
    # named after the argument equal to the factor, not "a division by 2 too many"
    assert "likely backward forgets to multiply by factor" in result.hint
    assert "factor = 0.5" in result.hint


def test_zero_config_keeps_a_schema_default():
    inference = infer(load_target(f"{FIXTURES}:scale"))
    assert [(c.name, c.kind, c.value) for c in inference.choices] == [
        ("x", "tensor", None), ("factor", "literal", 2.0),
    ]  # fmt: skip
    assert inference.ran


def test_init_writes_an_ops_starter_spec(tmp_path):
    starter = authoring.init(f"{FIXTURES}:gradverify_tests::mixed", tmp_path / "mixed.yaml")
    assert starter.path.name == "mixed.yaml"
    first_case = starter.text.split("inputs:\n", 1)[1].split("  - name:")[0]
    inputs = first_case.splitlines()
    assert [line.split("#")[0].strip() for line in inputs] == [
        "- {shape: [4], low: -1.0, high: 1.0}", "- 0.5", "- 1", "- true", "- [-1]",
    ]  # fmt: skip
    assert [line.split("# ")[1] for line in inputs] == [
        "x: a tensor (Tensor in the op's schema)",
        "alpha: a number (float, no default: choose a value)",
        "power: a number (int, no default: choose a value)",
        "flip: a bool (bool, no default: choose a value)",
        "dims: a list (int[], no default: choose a value)",
    ]


# --- the cache and pre-commit's selection --------------------------------------------------


OP_MODULE = """\
import torch


@torch.library.custom_op("{namespace}::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return 2 * x
"""


def test_an_op_target_depends_on_the_module_that_registers_it(tmp_path):
    package = f"gvops_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    ops = tmp_path / package / "ops.py"
    ops.write_text(OP_MODULE.format(namespace=package))
    (tmp_path / "specs").mkdir()
    for name, target in (
        ("named", f"{package}.ops:{package}::twice"),
        ("bare", f"op:{package}::twice"),
    ):
        (tmp_path / "specs" / f"{name}.yaml").write_text(
            f"target: '{target}'\ncases: [{{name: c, inputs: [{{shape: [3]}}]}}]\n"
        )
    selected = specs_depending_on([str(ops)], [str(tmp_path / "specs")], project=tmp_path)
    assert [entry.spec.target for entry in selected] == [f"{package}.ops:{package}::twice"]
    files = target_source_files(f"{package}.ops:{package}::twice", tmp_path)
    assert files == [(tmp_path / package / "__init__.py").resolve(), ops.resolve()]
    assert target_source_files(f"op:{package}::twice", tmp_path) == []
