"""The `opcheck` check: torch.library.opcheck's tests, each failure in plain words, pointing at
the registration it is about; `skip` for targets that are not ops."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from gradverify.checks.opcheck import NOT_AN_OP
from gradverify.results import Status

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = "tests.functions.custom_ops"
FIXTURE_FILE = ROOT / "tests" / "functions" / "custom_ops.py"
EXAMPLES = "gradverify.examples.custom_ops"
EXAMPLES_FILE = ROOT / "gradverify" / "examples" / "custom_ops.py"


def line_of(text: str, file: Path = FIXTURE_FILE) -> int:
    """The number of the first line of `file` that starts with `text`."""
    lines = file.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.startswith(text))


def opcheck(run_spec, target: str, inputs: str = "[{shape: [3, 4]}]") -> list:
    """The opcheck results of one case of `target`."""
    report = run_spec(
        f"""
        target: '{target}'
        checks: [forward, opcheck]
        cases: [{{name: case, inputs: {inputs}}}]
        """
    )
    return [r for r in report.results if r.check == "opcheck"]


def test_a_correct_op_passes_all_four_tests(run_spec):
    (result,) = opcheck(run_spec, f"{EXAMPLES}:mysin")
    assert result.status is Status.PASS
    assert result.message == "4 opcheck tests pass"


def test_a_wrong_backward_is_not_opchecks_to_find(run_spec):
    (result,) = opcheck(run_spec, f"{EXAMPLES}:gradverify_examples::mysin_wrong_backward")
    assert result.status is Status.PASS


def test_a_target_that_is_no_op_is_skipped_with_the_reason(run_spec):
    (result,) = opcheck(run_spec, "tests.functions.correct:Square")
    assert result.status is Status.SKIP
    assert not result.applies
    assert result.message == NOT_AN_OP
    assert "not a custom op" in NOT_AN_OP


def test_a_fake_of_the_wrong_shape_fails_faketensor_and_aot_dispatch_as_one_finding(run_spec):
    (fake,) = opcheck(run_spec, f"{EXAMPLES}:row_sum_wrong_fake")
    assert fake.status is Status.FAIL
    assert fake.message == (
        "test_faketensor fails: register_fake returns shape [3, 4] where the op returns [3]"
    )
    assert fake.hint.startswith("register_fake must return tensors of the shapes")
    assert any("Shapes torch.Size([3]) and torch.Size([3, 4])" in line for line in fake.details)
    # It points at the fake implementation (at its decorator, as inspect gives its lines).
    assert Path(fake.source_file) == EXAMPLES_FILE
    assert fake.source_line == line_of("@row_sum_wrong_fake.register_fake", EXAMPLES_FILE)
    # AOTAutograd traces the op with the wrong fake and fails too: said in a note, not as a
    # second finding, at the backward's line where the trace broke (expand() on its shape).
    (note,) = fake.notes
    assert note == (
        "test_aot_dispatch_dynamic fails too, most likely from the same cause (AOTAutograd "
        "traces the op with its fake): expand: the requested shape has too few dimensions! "
        f"(at custom_ops.py:{line_of('    return grad.unsqueeze(-1)', EXAMPLES_FILE)})"
    )


def test_a_fake_of_the_wrong_dtype_fails_faketensor(run_spec):
    (result,) = opcheck(run_spec, f"{FIXTURES}:wrong_fake_dtype")
    assert result.message == (
        "test_faketensor fails: register_fake returns float32 where the op returns float64"
    )


def test_a_missing_fake_says_how_to_add_one(run_spec):
    (fake,) = opcheck(run_spec, f"{FIXTURES}:no_fake")
    assert fake.message == "test_faketensor fails: the op has no fake implementation"
    assert "`@no_fake.register_fake`" in fake.hint
    # No fake to point at: the op itself.
    assert fake.source_line == line_of('@torch.library.custom_op("gradverify_tests::no_fake"')
    assert fake.notes[0].endswith("(AOTAutograd traces the op with its fake): the op has no fake "
                                  "implementation")  # fmt: skip


def test_an_undeclared_mutation_fails_the_schema_test_naming_the_argument(run_spec):
    (result,) = opcheck(run_spec, f"{FIXTURES}:undeclared_mutation", "[{shape: [4]}]")
    assert result.status is Status.FAIL
    assert result.message == (
        "test_schema fails: the op writes into argument 0 (x), which its schema does not "
        "declare mutable (mutates_args)"
    )
    assert "mutates_args" in result.hint
    # torch finds the mutation after the op returned: it points at the op.
    assert result.source_line == line_of(
        '@torch.library.custom_op("gradverify_tests::undeclared_mutation"'
    )


def test_an_op_without_an_autograd_kernel_fails_autograd_registration(run_spec):
    results = opcheck(run_spec, f"{FIXTURES}:gradverify_tests::cpu_only_sin", "[{shape: [4]}]")
    # test_aot_dispatch_dynamic fails after test_faketensor: a note of the latter's.
    assert [r.message.split(" fails")[0] for r in results] == [
        "test_autograd_registration", "test_faketensor",
    ]  # fmt: skip
    assert results[1].notes[0].startswith("test_aot_dispatch_dynamic fails too")
    registration = results[0]
    assert registration.message.startswith(
        "test_autograd_registration fails: the op has no autograd kernel"
    )
    # Defined with torch.library.Library, not custom_op: the functions of torch.library.
    assert '`torch.library.register_autograd("gradverify_tests::cpu_only_sin", backward,' in (
        registration.hint
    )
    assert '`@torch.library.register_fake("gradverify_tests::cpu_only_sin")`' in results[1].hint
    assert results[1].details == ()  # torch said only the op's name


def test_an_op_that_mutates_and_so_has_no_backward_says_why(run_spec):
    (result,) = opcheck(run_spec, f"{FIXTURES}:sin_cached", "[{shape: [4]}, {shape: [4]}]")
    assert result.message == (
        "test_aot_dispatch_dynamic fails: the op has no backward: nothing registered with "
        "register_autograd"
    )
    assert result.hint.startswith("torch allows no register_autograd on an op that mutates")
    assert result.same_as is None  # backward did not run here
    # Nothing to differentiate: it passes.
    inputs = "[{shape: [4], requires_grad: false}, {shape: [4], requires_grad: false}]"
    (passed,) = opcheck(run_spec, f"{FIXTURES}:sin_cached", inputs)
    assert passed.status is Status.PASS


def test_an_op_without_a_backward_is_said_once_by_backward(run_spec):
    report = run_spec(
        f"""
        target: '{FIXTURES}:sin_cached'
        checks: [forward, backward, opcheck]
        cases: [{{name: case, inputs: [{{shape: [4]}}, {{shape: [4]}}]}}]
        """
    )
    backward, opcheck = (r for r in report.results if r.failed)
    assert backward.check == "backward"
    assert "no autograd formula was registered" in backward.message
    assert opcheck.check == "opcheck"
    assert opcheck.same_as == "backward"


def test_a_forward_that_raises_is_said_once_by_forward(run_spec):
    results = opcheck(run_spec, f"{FIXTURES}:mixed", "[{shape: [4]}, 1.0, 2, true, [5]]")
    (result,) = results
    assert result.status is Status.SKIP
    assert result.same_as == "forward"


def test_nothing_of_torchs_leaks_out(run_spec, capfd):
    root_disabled = logging.root.manager.disable
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opcheck(run_spec, f"{EXAMPLES}:row_sum_wrong_fake")
    assert [str(w.message) for w in caught] == []
    assert capfd.readouterr().err == ""
    assert logging.root.manager.disable == root_disabled  # logging as it was
