"""The `lint` check: each pitfall under its rule id at its line; no finding on correct code."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
import torch

import gradverify.examples
from gradverify.catalogue import LINT_RULES as RULES
from gradverify.run import session
from gradverify.spec.load import SpecEntry, load_spec_file
from gradverify.spec.models import Case, FunctionSpec, LiteralInput, TensorInput
from gradverify.target.loading import load_target

ROOT = Path(__file__).resolve().parents[2]
LINT_SPEC = ROOT / "tests" / "specs" / "checks" / "lint.yaml"
PITFALLS = "tests.functions.pitfalls"
PITFALLS_FILE = ROOT / "tests" / "functions" / "pitfalls.py"
STRUCTURAL_FILE = ROOT / "tests" / "functions" / "structural_bugs.py"
# Correct Functions, and every bundled example (whose bugs, if any, are not pitfalls).
CORRECT_SPECS = [
    ROOT / "tests" / "specs" / "checks" / "correct.yaml",
    *sorted((ROOT / "specs").glob("*.yaml")),
]

# Function -> (the one rule it breaks, the status of that finding)
PITFALL_CASES = {
    "CtxTensorAttribute": ("GV101", "warn"),
    "SetupContextCtxTensor": ("GV101", "warn"),
    "DataInBackward": ("GV102", "warn"),
    "ReLUNoClone": ("GV103", "warn"),
    "InplaceSavedTensor": ("GV103", "warn"),
    "VarargsInplace": ("GV103", "warn"),
    "ExtraGradient": ("GV104", "fail"),
    "OnlyTwoForThreeParameters": ("GV104", "warn"),
    "SavesLiteral": ("GV105", "fail"),
    "SavesConstant": ("GV105", "fail"),
}


def line_after(file: Path, class_name: str, marker: str) -> int:
    """The 1-based line of the first line containing `marker` after `class <class_name>(`."""
    lines = file.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"class {class_name}("))
    return next(i + 1 for i in range(start, len(lines)) if marker in lines[i])


@pytest.fixture(scope="module")
def lint_report(run_spec):
    return run_spec(LINT_SPEC)


def lint_results(report, name, case="vector"):
    return [r for r in report.results if r.target == f"{PITFALLS}:{name}" and r.case == case]


@pytest.mark.parametrize(("name", "rule", "status"), [(n, *v) for n, v in PITFALL_CASES.items()])
def test_each_pitfall_is_found_under_its_rule_at_its_line(lint_report, name, rule, status):
    results = lint_results(lint_report, name)
    assert [(r.check, r.rule, r.status.value) for r in results] == [("lint", rule, status)]
    result = results[0]
    assert result.source_line == line_after(PITFALLS_FILE, name, f"# pitfall: {rule}")
    assert Path(result.source_file).resolve() == PITFALLS_FILE
    assert result.message.startswith(f"{rule}: ")
    assert result.hint == RULES[rule][1]


def test_ctx_tensor_names_the_attribute_and_leaves_non_tensors_alone(lint_report):
    (result,) = lint_results(lint_report, "CtxTensorAttribute")
    assert "ctx.x holds a float64 tensor of shape [4]" in result.message
    assert "alpha" not in result.message
    assert "input_shape" not in result.message


def test_inplace_on_grad_output_names_the_output_through_an_alias(lint_report):
    (result,) = lint_results(lint_report, "ReLUNoClone")
    assert result.output_index == 0
    assert "`grad_input[x < 0] = 0`" in result.message
    assert "grad_output 0 (grad_output)" in result.message


def test_inplace_on_a_saved_tensor_says_so(lint_report):
    (result,) = lint_results(lint_report, "InplaceSavedTensor")
    assert "`x.mul_(2)`" in result.message
    assert "saved tensor" in result.message
    assert result.output_index is None


def test_saving_a_literal_fails_and_names_the_argument(lint_report):
    (result,) = lint_results(lint_report, "SavesLiteral")
    assert (result.input_index, result.input_name) == (1, "alpha")
    assert "argument 1 (alpha), a float in this case" in result.message
    assert any("save_for_backward can only save variables" in note for note in result.notes)


def test_too_few_gradients_fails_at_the_return(lint_report):
    (result,) = [
        r
        for r in lint_report.results
        if r.target == "tests.functions.structural_bugs:TooFewGradients"
    ]
    assert (result.rule, result.status.value) == ("GV104", "fail")
    assert result.source_line == line_after(
        STRUCTURAL_FILE, "TooFewGradients", "return grad_output"
    )
    assert Path(result.source_file).resolve() == STRUCTURAL_FILE
    assert "returns 1 value(s) here, but forward takes 2 argument(s) (x, alpha)" in result.message


def test_a_return_short_only_of_a_defaulted_parameter_warns(lint_report):
    (result,) = lint_results(lint_report, "OnlyTwoForThreeParameters")
    assert "forward takes 3 argument(s) (x, w, scale)" in result.message
    assert "passes only 2" in result.message


def test_oddly_written_correct_function_passes(lint_report):
    results = lint_results(lint_report, "OddlyWrittenCorrect")
    assert [(r.status.value, r.message) for r in results] == [
        ("pass", "no pitfalls found (GV101–GV106)")
    ]


def test_a_plain_function_is_skipped(lint_report):
    (result,) = lint_results(lint_report, "square")
    assert result.status.value == "skip"
    assert result.message == "lint applies to torch.autograd.Function subclasses"


def test_without_source_the_run_time_rule_still_finds_ctx_tensors(lint_report):
    (result,) = lint_results(lint_report, "NoSourceCtxTensor")
    assert (result.rule, result.status.value) == ("GV101", "warn")
    assert "ctx.x holds" in result.message
    assert result.source_line is None
    assert any("source of forward and backward unavailable" in note for note in result.notes)


def test_without_a_graph_node_the_run_time_rule_says_it_was_not_checked(lint_report):
    (result,) = lint_results(lint_report, "NoSourceCtxTensor", case="no_grad")
    assert result.status.value == "pass"
    assert any(note.startswith("GV101 not checked") for note in result.notes)


def test_a_forward_crash_of_another_kind_is_left_to_the_forward_check(run_spec):
    report = run_spec(
        """
        target: tests.functions.mapping:ForwardRaises
        checks: [lint]
        cases: [{name: vector, inputs: [{shape: [3]}]}]
        """
    )
    (result,) = report.results
    assert result.status.value == "pass"
    assert any("GV101 not checked" in n and "ValueError" in n for n in result.notes)


def _function_classes(module_name: str) -> set[str]:
    module = importlib.import_module(module_name)
    return {
        f"{module_name}:{name}"
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, torch.autograd.Function)
        and value.__module__ == module_name
    }


def bundled_and_correct() -> set[str]:
    """Every Function in tests/functions/correct.py and in gradverify/examples/*.py."""
    targets = _function_classes("tests.functions.correct")
    for info in pkgutil.iter_modules(gradverify.examples.__path__):
        targets |= _function_classes(f"gradverify.examples.{info.name}")
    return targets


def _inferred_entry(target: str) -> SpecEntry:
    """A lint-only case for a Function no spec names: [4] tensors, defaults as given."""
    loaded = load_target(target)
    inputs = [
        LiteralInput(value=loaded.defaults[name])
        if name in loaded.defaults
        else TensorInput(shape=[4])
        for name in loaded.parameters
    ]
    spec = FunctionSpec(
        target=target, checks=["lint"], cases=[Case(name="inferred", inputs=inputs)]
    )
    return SpecEntry(spec=spec, file=None)


@pytest.fixture(scope="module")
def repo_cwd():
    """Targets import from the repository root, as when a user runs gradverify there."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        yield ROOT


@pytest.fixture(scope="module")
def correct_report(repo_cwd):
    entries = [
        dataclasses.replace(entry, spec=entry.spec.model_copy(update={"checks": ["lint"]}))
        for spec_file in CORRECT_SPECS
        for entry in load_spec_file(spec_file)
    ]
    named = {entry.spec.target for entry in entries}
    entries += [_inferred_entry(target) for target in sorted(bundled_and_correct() - named)]
    return session.run(entries, session.RunOptions(isolation=False, cache=False))


def test_every_bundled_and_correct_function_is_linted(correct_report):
    assert len(bundled_and_correct()) >= 15
    assert bundled_and_correct() <= {result.target for result in correct_report.results}


def test_no_false_alarm_on_correct_functions(correct_report):
    problems = [
        (r.target, r.case, r.status.value, r.message)
        for r in correct_report.results
        # lint reads Functions; for a custom op it does not apply
        if r.applies and (r.status.value, r.message) != ("pass", "no pitfalls found (GV101–GV106)")
    ]
    assert problems == []


def test_the_rules_table_has_every_rule_with_a_title_and_a_remedy():
    assert list(RULES) == ["GV101", "GV102", "GV103", "GV104", "GV105", "GV106"]
    for title, remedy in RULES.values():
        assert title
        assert remedy
