"""The `compile` check: the target under torch.compile(aot_eager, fullgraph) against eager,
and how it is turned on (opt-in; by default for custom ops)."""

from __future__ import annotations

import inspect
import logging
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from gradverify.checks.shared import dynamo
from gradverify.errors import SpecError
from gradverify.examples import compiled as examples
from gradverify.spec.config import Config, ConfigError, Settings, load_config, with_defaults
from gradverify.spec.load import parse_spec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = "gradverify.examples.compiled"
FIXTURES = "tests.functions.compiled"


def compile_spec(target, inputs, extra="checks: [compile]"):
    return f"""
    target: {target}
    {extra}
    cases: [{{name: case, inputs: {inputs}}}]
    """


# --- verdicts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "inputs"),
    [
        ("ScaledSin", "[{shape: [8]}, 2.0]"),  # classic style, with ctx
        ("SoftClip", "[{shape: [3, 4]}, 1.5]"),  # new style, setup_context
        ("ScaledSin", "[{shape: [64], dtype: bfloat16}, 3.0]"),  # rounding is not a finding
    ],
)
def test_functions_that_compile_whole_pass(run_spec, only, name, inputs):
    report = run_spec(compile_spec(f"{EXAMPLES}:{name}", inputs))

    result = only(report, check="compile")
    assert result.status.value == "pass", result.message
    assert "compiled whole" in result.message  # not run eagerly


def test_a_graph_break_warns_with_dynamos_reason_at_the_users_line(run_spec, only):
    report = run_spec(compile_spec(f"{EXAMPLES}:MeanCentered", "[{shape: [6]}]"))

    result = only(report, check="compile")
    lines, first = inspect.getsourcelines(examples.MeanCentered.forward)
    item_line = first + next(i for i, line in enumerate(lines) if ".item()" in line)
    assert result.status.value == "warn"
    assert result.source_file == "gradverify/examples/compiled.py"
    assert result.source_line == item_line
    assert f"graph break under torch.compile at gradverify/examples/compiled.py:{item_line}" in (
        result.message
    )
    assert "Tensor.item()" in result.message
    assert "in pieces" in result.hint


def test_a_gradient_that_differs_under_compile_fails_at_the_element(run_spec, only):
    report = run_spec(compile_spec(f"{FIXTURES}:FastPathUnderCompile", "[{shape: [3, 2]}, 0.5]"))

    result = only(report, check="compile")
    assert result.status.value == "fail"
    assert (result.input_index, result.input_name) == (0, "x")
    assert result.element is not None and len(result.element) == 2
    assert result.analytical == pytest.approx(2 * result.numerical)  # compiled is doubled
    assert result.value_labels == ("compiled", "eager")
    assert result.mismatched == result.total == 6
    assert "gradient of argument 0 (x) differs from eager at element" in result.message


def test_an_output_that_differs_under_compile_fails_at_the_element(run_spec, only):
    report = run_spec(compile_spec(f"{FIXTURES}:ZeroesARowUnderCompile", "[{shape: [3, 2]}]"))

    result = only(report, check="compile")
    assert result.status.value == "fail"
    assert result.output_index == 0
    assert result.element[0] == 1  # row 1 is zeroed
    assert result.analytical == 0.0
    assert result.numerical != 0.0
    assert result.mismatched == 2


def test_literals_non_tensor_outputs_plain_functions_and_custom_ops_pass(run_spec, find):
    report = run_spec(
        f"""
        functions:
          - target: {FIXTURES}:WithCount
            checks: [compile]
            cases: [{{name: case, inputs: [{{shape: [4]}}, 3.0]}}]
          - target: {FIXTURES}:scaled_tanh
            checks: [compile]
            cases: [{{name: case, inputs: [{{shape: [2, 3]}}, 1.5]}}]
          - target: {FIXTURES}:cube
            checks: [compile]
            cases: [{{name: case, inputs: [{{shape: [5]}}]}}]
        """
    )

    results = find(report, check="compile")
    assert [r.status.value for r in results] == ["pass"] * 3, [r.message for r in results]
    assert results[0].message.startswith("2 output(s)")


def test_a_crash_in_eager_is_a_failure_of_the_users_code(run_spec, only):
    report = run_spec(compile_spec(f"{FIXTURES}:RaisesInForward", "[{shape: [3]}]"))

    result = only(report, check="compile")
    assert result.status.value == "fail"
    assert "forward raised ValueError at tests/functions/compiled.py" in result.message


def test_many_cases_of_one_target_stay_compiled(run_spec, find):
    # More cases than dynamo's recompile limit, each of another shape and literal: past the
    # limit dynamo would run the target eagerly, which passes the seeded bug.
    limit = torch._dynamo.config.recompile_limit
    cases = ", ".join(
        f"{{name: c{n}, inputs: [{{shape: [{n + 1}]}}, {0.5 + n}]}}" for n in range(limit + 4)
    )
    report = run_spec(
        f"""
        functions:
          - target: {FIXTURES}:FastPathUnderCompile
            checks: [compile]
            cases: [{cases}]
          - target: {EXAMPLES}:ScaledSin
            checks: [compile]
            cases: [{cases}]
        """
    )

    buggy = find(report, target=f"{FIXTURES}:FastPathUnderCompile", check="compile")
    correct = find(report, target=f"{EXAMPLES}:ScaledSin", check="compile")
    assert [r.status.value for r in buggy] == ["fail"] * (limit + 4)
    assert all("compiled whole" in r.message for r in correct), [r.message for r in correct]


def test_unavailable_torch_compile_is_a_skip_with_the_reason(run_spec, only, monkeypatch):
    import torch._dynamo.eval_frame

    def unsupported() -> None:
        raise RuntimeError("Python 3.99+ not yet supported for torch.compile")

    monkeypatch.setattr(torch._dynamo.eval_frame, "check_if_dynamo_supported", unsupported)
    report = run_spec(compile_spec(f"{EXAMPLES}:ScaledSin", "[{shape: [3]}, 2.0]"))

    result = only(report, check="compile")
    assert result.status.value == "skip"
    assert result.message == (
        "torch.compile is not available here: Python 3.99+ not yet supported for torch.compile"
    )


# --- quiet, and no state left behind ----------------------------------------------------------


def test_a_graph_break_prints_nothing_and_leaves_logging_and_warnings_as_they_were(
    run_spec, only, capfd
):
    filters = list(warnings.filters)
    disabled = logging.root.manager.disable

    report = run_spec(compile_spec(f"{EXAMPLES}:MeanCentered", "[{shape: [6]}]"))

    assert only(report, check="compile").status.value == "warn"
    captured = capfd.readouterr()
    assert (captured.out, captured.err) == ("", "")
    assert warnings.filters == filters
    assert logging.root.manager.disable == disabled


def test_the_command_shows_no_dynamo_output():
    done = subprocess.run(
        [sys.executable, "-m", "gradverify", "check", "specs/compile.yaml", "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    assert "graph break under torch.compile at gradverify/examples/compiled.py" in done.stdout
    for dynamo_words in ("W11", "torch/_dynamo", "TORCH_LOGS", "capture_scalar_outputs = True\n"):
        assert dynamo_words not in done.stdout


def test_nothing_compiled_is_left_for_later_checks(run_spec):
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    run_spec(compile_spec(f"{EXAMPLES}:ScaledSin", "[{shape: [3]}, 2.0]"))

    whole = dynamo._whole(examples.ScaledSin.apply)
    assert _debug_get_cache_entry_list(whole.__code__) == []


# --- how it is turned on ----------------------------------------------------------------------


def entry_of(text):
    (entry,) = parse_spec(text, "spec.yaml")
    return entry


def test_compile_is_opt_in_by_default_and_on_for_custom_ops():
    spec = entry_of(compile_spec("a:B", "[{shape: [3]}]", extra="")).spec

    assert "compile" not in spec.checks_for(custom_op=False)
    assert "compile" in spec.checks_for(custom_op=True)
    assert spec.checks_for(custom_op=True) == [*spec.checks_for(custom_op=False), "compile"]


def test_extra_checks_in_a_spec_adds_compile_to_the_default_checks():
    spec = entry_of(compile_spec("a:B", "[{shape: [3]}]", extra="extra_checks: [compile]")).spec
    default = entry_of(compile_spec("a:B", "[{shape: [3]}]", extra="")).spec

    assert spec.checks_for(custom_op=False) == [*default.checks_for(custom_op=False), "compile"]


def test_checks_listed_in_a_spec_are_the_checks_even_for_a_custom_op():
    spec = entry_of(compile_spec("a:B", "[{shape: [3]}]", extra="checks: [forward]")).spec

    assert spec.checks_for(custom_op=True) == ["forward"]


def test_extra_checks_beside_checks_is_a_spec_error():
    text = compile_spec(
        "a:B", "[{shape: [3]}]", extra="checks: [forward]\n    extra_checks: [compile]"
    )
    with pytest.raises(SpecError) as raised:
        parse_spec(text, "spec.yaml")

    assert "`extra_checks` adds to the default checks" in str(raised.value)


def test_an_unknown_extra_check_suggests_the_id():
    with pytest.raises(SpecError) as raised:
        parse_spec(compile_spec("a:B", "[{shape: [3]}]", extra="extra_checks: [compil]"), "s.yaml")

    assert "did you mean 'compile'?" in str(raised.value)


def test_the_config_key_adds_compile_where_a_spec_chooses_no_checks(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gradverify]\nextra_checks = ["compile"]\n')
    config = load_config(tmp_path)
    plain = entry_of(compile_spec("a:B", "[{shape: [3]}]", extra=""))
    listed = entry_of(compile_spec("a:B", "[{shape: [3]}]", extra="checks: [forward]"))

    plain_after, listed_after = with_defaults([plain, listed], config)

    assert "compile" in plain_after.spec.checks_for(custom_op=False)
    assert listed_after.spec.checks_for(custom_op=False) == ["forward"]
    assert with_defaults([plain], Config(Settings()))[0].spec.checks_for(custom_op=False) == (
        plain.spec.checks_for(custom_op=False)
    )


def test_the_config_key_is_validated_against_the_check_ids(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gradverify]\nextra_checks = ["compil"]\n')

    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path)

    message = raised.value.render()
    assert "pyproject.toml:2: tool.gradverify.extra_checks" in message
    assert "did you mean 'compile'?" in message


def test_a_custom_op_target_runs_compile_without_being_asked(run_spec, find):
    report = run_spec(compile_spec(f"{FIXTURES}:cube", "[{shape: [4]}]", extra=""))
    function = run_spec(compile_spec(f"{EXAMPLES}:ScaledSin", "[{shape: [4]}, 2.0]", extra=""))

    assert [r.status.value for r in find(report, check="compile")] == ["pass"]
    assert find(function, check="compile") == []


def test_a_random_function_is_compared_on_the_same_random_numbers(run_spec, only):
    # A dropout-like mask: compiled and eager draw the same mask when seeded alike.
    report = run_spec(compile_spec("tests.functions.layouts:RandomMask", "[{shape: [64]}]"))

    result = only(report, check="compile")
    assert result.status.value == "pass", result.message


def test_the_extra_check_flag_adds_compile_to_every_spec(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from gradverify.cli import app

    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"""
functions:
  - target: {EXAMPLES}:ScaledSin
    cases: [{{name: default, inputs: [{{shape: [3]}}, 2.0]}}]
  - target: {EXAMPLES}:SoftClip
    checks: [forward]
    cases: [{{name: listed, inputs: [{{shape: [3]}}, 1.5]}}]
"""
    )
    monkeypatch.chdir(ROOT)
    arguments = ["check", str(spec), "--no-isolation", "--no-cache", "--format", "json"]

    added = CliRunner().invoke(app, [*arguments, "--extra-check", "compile"])
    wrong = CliRunner().invoke(app, [*arguments, "--extra-check", "compil"])

    compiled = [r for r in json.loads(added.stdout)["results"] if r["check"] == "compile"]
    assert [(r["case"], r["status"]) for r in compiled] == [("default", "pass"), ("listed", "pass")]
    assert wrong.exit_code == 2
    assert "--extra-check: no check 'compil' (did you mean 'compile'?)" in wrong.stderr


def test_an_error_while_tracing_warns_as_the_same_finding_as_opcheck(run_spec, only, find):
    report = run_spec(
        compile_spec(f"{FIXTURES}:row_total", "[{shape: [3, 4]}]", "checks: [opcheck, compile]")
    )

    result = only(report, check="compile")
    assert result.status.value == "warn"
    assert result.message.startswith("torch.compile cannot trace it")
    assert "RuntimeError" in result.message and "counting" not in result.message
    assert result.same_as == "opcheck"
    failures = find(report, check="opcheck", status="fail")
    assert failures[0].message.startswith("test_faketensor fails")


def test_a_function_dynamo_refuses_whole_is_a_graph_break(run_spec, only):
    # dynamo does not trace a Function with a custom jvp: it runs it uncompiled.
    report = run_spec(compile_spec("tests.functions.forward_mode:SquareWithJvp", "[{shape: [4]}]"))

    result = only(report, check="compile")
    from tests.functions.forward_mode import SquareWithJvp

    _, jvp_line = inspect.getsourcelines(SquareWithJvp.jvp)
    assert result.status.value == "warn"
    assert result.source_file == "tests/functions/forward_mode.py"
    assert result.source_line == jvp_line  # the jvp dynamo refuses, not "no line"
    where = f"graph break under torch.compile at tests/functions/forward_mode.py:{jvp_line}: "
    assert result.message.startswith(where)
    assert "custom `jvp`" in result.message
    # not dynamo's "Remove the custom jvp": func's jacfwd and forward-mode AD need it
    assert "not a bug" in result.hint and "Keep `jvp`" in result.hint
    assert "Remove" not in result.hint
