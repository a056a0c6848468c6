"""`--format junit`, read back with junitparser as CI systems read it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from junitparser import Failure, JUnitXml, Skipped

from gradverify.report import RenderOptions, junit
from gradverify.results import Report, Result, Status


def parse(report: Report) -> JUnitXml:
    return JUnitXml.fromstring(junit.render(report, RenderOptions()))


def make(status: Status = Status.PASS, **fields: object) -> Result:
    defaults: dict[str, object] = {"target": "pkg.ops:Fn", "case": "vector", "check": "forward"}
    return Result(status=status, **{**defaults, **fields})


def cases_of(xml: JUnitXml) -> list:
    return [case for suite in xml for case in suite]


@pytest.fixture
def buggy_xml(buggy_report, in_repo):
    return parse(buggy_report)


def test_one_suite_per_target_with_its_counts(buggy_report, buggy_xml):
    summary = buggy_report.summary
    assert (buggy_xml.tests, buggy_xml.failures, buggy_xml.skipped, buggy_xml.errors) == (
        summary.results - summary.not_applicable,
        summary.failed,
        summary.skipped,
        0,
    )
    targets = list(dict.fromkeys(result.target for result in buggy_report.results))
    assert [suite.name for suite in buggy_xml] == targets
    for suite in buggy_xml:
        of_suite = [r for r in buggy_report.results if r.target == suite.name]
        statuses = Counter(r.status for r in of_suite if not r.not_applicable)
        assert suite.tests == sum(statuses.values())
        assert suite.failures == statuses[Status.FAIL]
        assert suite.skipped == statuses[Status.SKIP]
        (not_applicable,) = [p.value for p in suite.properties() if p.name == "not_applicable"]
        assert int(not_applicable) == sum(r.not_applicable for r in of_suite) > 0


def test_one_testcase_per_result_named_case_check_and_argument(buggy_report, buggy_xml):
    cases = cases_of(buggy_xml)
    applying = [result for result in buggy_report.results if not result.not_applicable]
    assert len(cases) == len(applying)
    for case, result in zip(cases, applying, strict=True):
        assert case.classname == result.target
        assert case.name.startswith(f"{result.case}::{result.check}")
        assert case.time == pytest.approx(result.seconds, abs=1e-3)
    names = {case.name for case in cases}
    assert "scalar_beta::finite_difference[argument 1 (beta)]" in names


def test_a_failure_carries_its_message_and_the_evidence(buggy_report, buggy_xml):
    result = next(r for r in buggy_report.results if r.failed and r.analytical is not None)
    case = next(
        c for c in cases_of(buggy_xml) if c.name.startswith(f"{result.case}::{result.check}")
    )
    (failure,) = case.result
    assert isinstance(failure, Failure)
    assert failure.message == result.message
    assert failure.type == f"gradverify.{result.check}"
    body = failure.text
    assert f"analytical: {result.analytical:.8g}" in body
    assert f"numerical: {result.numerical:.8g}" in body
    assert f"element: {list(result.element)}" in body
    assert f"likely cause: {result.hint}" in body
    assert f"spec: specs/buggy.yaml:{result.spec_line}" in body  # relative to the project


def test_reporters_that_annotate_find_the_spec_file_and_line(buggy_report, in_repo):
    root = ET.fromstring(junit.render(buggy_report))
    first = root.find("testsuite/testcase")
    assert first is not None
    assert first.get("file") == "specs/buggy.yaml"
    assert first.get("line") == str(buggy_report.results[0].spec_line)


def test_skips_are_skipped_and_warnings_pass_with_the_warning_in_system_out():
    report = Report(
        (
            make(Status.SKIP, check="vmap", message="no vmap rule"),
            make(Status.WARN, check="lint", message="GV102: .data used", rule="GV102"),
            make(Status.PASS, check="backward", cached=True),
        )
    )
    skipped, warned, cached = cases_of(parse(report))
    assert skipped.is_skipped
    assert isinstance(skipped.result[0], Skipped)
    assert skipped.result[0].message == "no vmap rule"
    assert warned.is_passed
    assert warned.name == "vector::lint[GV102]"
    assert "WARNING: GV102: .data used" in warned.system_out
    assert cached.is_passed
    assert "cached" in cached.system_out


def test_text_that_xml_cannot_carry_is_escaped_or_replaced():
    message = 'a <b>&"quoted"\' value\x1b[31m red\x00 and\nmore'
    report = Report((make(Status.FAIL, message=message, case="<case & co>"),))
    (case,) = cases_of(parse(report))
    assert case.name == "<case & co>::forward"
    assert case.result[0].message == 'a <b>&"quoted"\' value\ufffd[31m red\ufffd and'
    assert "more" in case.result[0].text


def test_names_are_unique_within_a_suite():
    report = Report(
        (
            make(Status.WARN, check="lint", rule="GV102", message="one"),
            make(Status.WARN, check="lint", rule="GV102", message="two"),
            make(Status.FAIL, check="finite_difference", input_index=0, input_name="x"),
            make(Status.FAIL, check="reference", output_index=1),
        )
    )
    names = [case.name for case in cases_of(parse(report))]
    assert names == [
        "vector::lint[GV102]",
        "vector::lint[GV102] #2",
        "vector::finite_difference[argument 0 (x)]",
        "vector::reference[output 1]",
    ]


def test_notes_go_to_the_suite_of_the_target_they_name():
    report = Report(
        (make(target="pkg.ops:Fn"), make(target="pkg.ops:FnTwo")),
        notes=("pkg.ops:FnTwo [vector]: float32 promoted", "a run-level remark"),
    )
    first, second = ET.fromstring(junit.render(report)).iter("testsuite")
    assert second.findtext("system-out") == "pkg.ops:FnTwo [vector]: float32 promoted"
    assert first.findtext("system-out") == "a run-level remark"
    assert [suite.name for suite in parse(report)] == ["pkg.ops:Fn", "pkg.ops:FnTwo"]


def test_an_empty_run_is_an_empty_but_valid_report():
    xml = parse(Report(()))
    assert (xml.tests, xml.failures, len(list(xml))) == (0, 0, 0)
