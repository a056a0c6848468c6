"""`--format junit`: JUnit XML, the test report every CI system reads.

One `<testsuite>` per target, one `<testcase>` per result: classname the target, name
`case::check` (with the argument, output or lint rule when the result is about one). A
failure carries its one-line message in `message` and the whole explanation in its body;
a skip is `<skipped>`; a warning passes, with the warning in `<system-out>`. gradverify's
own failure on a case (an internal error) is an `<error>`, as pytest writes its own.
A check that does not apply to the Function (no jvp rule, no `reference:` key) is not a
test, and CI would show a `<skipped>` one as skipped: it has no `<testcase>`, and the
suite's `not_applicable` property counts it. A check passed as a surrogate is said once per
argument in the suite's `surrogate` properties (`v — forward is piecewise constant in v ...`).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Iterator

from gradverify.report.evidence import argument, explanation, relative_path
from gradverify.report.options import RenderOptions
from gradverify.report.surrogates import covered
from gradverify.results import Report, Result, Status

# Characters XML 1.0 cannot carry at all, not even escaped (ANSI escapes, NUL...).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def render(report: Report, options: RenderOptions | None = None) -> str:
    summary = report.summary
    errors = len(report.internal_errors)
    root = ET.Element(
        "testsuites",
        name="gradverify",
        tests=str(summary.results - summary.not_applicable),
        failures=str(summary.failed - errors),
        errors=str(errors),
        skipped=str(summary.skipped),
        time=_seconds(report.results),
    )
    by_target: dict[str, list[Result]] = {}
    for result in report.results:
        by_target.setdefault(result.target, []).append(result)
    suites = {target: _suite(target, results) for target, results in by_target.items()}
    for note in report.notes:  # in the suite of the target it names, else in the first
        first = next(iter(suites), None)
        named = next((target for target in suites if _names(note, target)), first)
        if named is not None:
            _add_output(suites[named], [note])
    root.extend(suites.values())
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(target: str, all_results: list[Result]) -> ET.Element:
    results = [result for result in all_results if not result.not_applicable]
    by_status = Counter(result.status for result in results)
    errors = sum(1 for result in results if result.internal)
    suite = ET.Element(
        "testsuite",
        name=_xml(target),
        tests=str(len(results)),
        failures=str(by_status[Status.FAIL] - errors),
        errors=str(errors),
        skipped=str(by_status[Status.SKIP]),
        time=_seconds(all_results),
    )
    properties = ET.SubElement(suite, "properties")
    not_applicable = str(len(all_results) - len(results))
    ET.SubElement(properties, "property", name="not_applicable", value=not_applicable)
    for said in covered(results):
        ET.SubElement(properties, "property", name="surrogate", value=_xml(said))
    for result, name in zip(results, _unique(_name(result) for result in results), strict=True):
        suite.append(_testcase(result, name))
    return suite


def _names(note: str, target: str) -> bool:
    """Whether `note` is about `target` (and not about a target whose name merely begins so)."""
    return re.search(rf"(?<![\w.:]){re.escape(target)}(?![\w.])", note) is not None


def _testcase(result: Result, name: str) -> ET.Element:
    testcase = ET.Element(
        "testcase", classname=_xml(result.target), name=_xml(name), time=_seconds([result])
    )
    if result.spec_file is not None:  # for reporters that annotate the spec line
        testcase.set("file", _xml(relative_path(result.spec_file)))
        if result.spec_line is not None:
            testcase.set("line", str(result.spec_line))
    body = "\n".join(explanation(result))
    if result.status is Status.FAIL:
        kind, category = ("error", "internal") if result.internal else ("failure", result.check)
        failure = ET.SubElement(
            testcase, kind, message=_xml(_headline(result)), type=f"gradverify.{category}"
        )
        failure.text = _xml(body)
    elif result.status is Status.SKIP:
        ET.SubElement(testcase, "skipped", message=_xml(_headline(result)))
    elif result.status is Status.WARN:
        _add_output(testcase, [f"WARNING: {body}"])
    elif result.cached:
        _add_output(testcase, ["passed (cached: unchanged since an earlier passing run)"])
    return testcase


def _name(result: Result) -> str:
    name = f"{result.case}::{result.check}"
    if result.input_index is not None:
        name += f"[argument {argument(result)}]"
    elif result.output_index is not None:
        name += f"[output {result.output_index}]"
    if result.rule is not None:
        name += f"[{result.rule}]"
    return name


def _unique(names: Iterable[str]) -> Iterator[str]:
    """Consumers key test cases by name: number repeats (two findings of one lint rule)."""
    seen: Counter[str] = Counter()
    for name in names:
        seen[name] += 1
        yield name if seen[name] == 1 else f"{name} #{seen[name]}"


def _headline(result: Result) -> str:
    first = result.message.splitlines()[0] if result.message else result.status.value
    return first if len(first) <= 200 else first[:199] + "…"


def _add_output(element: ET.Element, lines: list[str]) -> None:
    output = element.find("system-out")
    if output is None:
        output = ET.SubElement(element, "system-out")
    output.text = _xml("\n".join(filter(None, [output.text, *lines])))


def _seconds(results: Iterable[Result]) -> str:
    return f"{sum(result.seconds for result in results):.3f}"


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)
