"""`--format json`: the report's plain form, a public contract for CI scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.report import json_format
from gradverify.results import REPORT_VERSION, Report, Result, Status

ROOT = Path(__file__).resolve().parents[1]

TOP_LEVEL = {"version", "passed", "summary", "results", "coverage"}
SUMMARY = {
    "targets",
    "cases",
    "results",
    "passed",
    "failed",
    "skipped",
    "warnings",
    "not_applicable",
}
RESULT = {
    "target",
    "case",
    "check",
    "status",
    "message",
    "input_index",
    "input_name",
    "output_index",
    "element",
    "analytical",
    "numerical",
    "max_abs_error",
    "seconds",
}


def strict_json(text):
    """Parse as a strict JSON reader would: NaN and Infinity are not JSON."""

    def reject(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=reject)


def check_json(*arguments):
    result = CliRunner().invoke(app, ["check", "--format", "json", *arguments])
    return result.exit_code, strict_json(result.stdout)


@pytest.fixture(scope="module")
def buggy():
    # A module fixture cannot use the function-scoped `in_repo`; the paths are absolute.
    code, document = check_json(str(ROOT / "specs" / "buggy.yaml"))
    assert code == 1
    return document


def test_top_level_keys_and_version(buggy):
    assert set(buggy) >= TOP_LEVEL
    assert buggy["version"] == REPORT_VERSION == 1
    assert buggy["passed"] is False


def test_every_result_has_the_contract_keys(buggy):
    assert buggy["results"]
    for result in buggy["results"]:
        assert set(result) >= RESULT, RESULT - set(result)
        assert result["status"] in {"pass", "fail", "skip", "warn"}
        assert isinstance(result["message"], str)
        assert isinstance(result["seconds"], float)


def test_summary_counts_match_the_results(buggy):
    results = buggy["results"]
    summary = buggy["summary"]
    assert set(summary) == SUMMARY
    assert summary["results"] == len(results)
    for key, status in [
        ("passed", "pass"),
        ("failed", "fail"),
        ("warnings", "warn"),
    ]:
        assert summary[key] == sum(r["status"] == status for r in results), key
    # A check that does not apply to the Function is counted apart, never as a skip.
    skips = [r for r in results if r["status"] == "skip"]
    assert summary["skipped"] == sum(r["applies"] for r in skips)
    assert summary["not_applicable"] == sum(not r["applies"] for r in skips) > 0
    assert summary["targets"] == len({r["target"] for r in results}) == 3
    assert summary["cases"] == len({(r["target"], r["case"]) for r in results}) == 3
    assert summary["failed"] > 0


def test_a_0d_argument_has_an_empty_element(buggy):
    (beta,) = [
        r
        for r in buggy["results"]
        if r["target"] == "gradverify.examples.buggy:SwishWrongBeta"
        and r["check"] == "finite_difference"
        and r["status"] == "fail"
    ]
    assert beta["element"] == []
    assert (beta["input_index"], beta["input_name"]) == (1, "beta")
    assert isinstance(beta["analytical"], float)
    assert isinstance(beta["numerical"], float)
    assert beta["max_abs_error"] == pytest.approx(abs(beta["analytical"] - beta["numerical"]))


def test_target_is_exactly_as_written(tmp_path, in_repo):
    spec = tmp_path / "swish.yaml"
    spec.write_text(
        "target: gradverify/examples/swish.py:Swish\n"
        "checks: [forward]\n"
        "cases: [{name: scalar_beta, inputs: [{shape: [3]}, {shape: []}]}]\n"
    )
    code, document = check_json(str(spec))
    assert code == 0
    assert [r["target"] for r in document["results"]] == ["gradverify/examples/swish.py:Swish"]


def test_non_finite_numbers_still_make_valid_json(tmp_path, in_repo):
    spec = tmp_path / "nan.yaml"
    spec.write_text(
        "target: tests.functions.structural_bugs:NaNGradient\n"
        "checks: [finite_difference]\n"
        "cases: [{name: vector, inputs: [{shape: [4]}]}]\n"
    )
    code, document = check_json(str(spec))  # strict_json refuses NaN and Infinity
    assert code == 1
    (result,) = document["results"]
    assert result["element"] == [2]
    assert result["analytical"] == "nan"


def test_the_json_is_the_reports_plain_form():
    report = Report(
        results=(
            Result("m:F", "case", "forward", Status.PASS, "ok", seconds=0.5),
            Result(
                "m:F",
                "case",
                "finite_difference",
                Status.FAIL,
                "wrong",
                input_index=1,
                input_name="beta",
                output_index=0,
                element=(),
                analytical=1.0,
                numerical=2.0,
                max_abs_error=1.0,
            ),
            Result("m:G", "other", "gradcheck", Status.SKIP, "no cuda"),
            Result("m:G", "other", "forward", Status.WARN, "no output is differentiable"),
        ),
        notes=("inputs inferred",),
    )
    document = strict_json(json_format.render(report))
    assert document == json.loads(json.dumps(report.to_dict()))
    assert document["summary"] == {
        "targets": 2,
        "cases": 2,
        "results": 4,
        "passed": 1,
        "failed": 1,
        "skipped": 1,
        "warnings": 1,
        "not_applicable": 0,
    }
    assert document["passed"] is False
    assert document["results"][1]["element"] == []
    assert document["results"][0]["element"] is None
    assert document["notes"] == ["inputs inferred"]


def test_warnings_and_skips_do_not_fail_a_report():
    report = Report(
        results=(
            Result("m:F", "c", "forward", Status.WARN),
            Result("m:F", "c", "backward", Status.SKIP),
        )
    )
    assert strict_json(json_format.render(report))["passed"] is True
