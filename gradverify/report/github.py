"""`--format github`: GitHub Actions workflow commands that annotate the failing lines.

Each failure becomes one `::error file=…,line=…,title=…::message` at the spec line of its
case; where the user's code is known (backward's line, say), the message's first line says
`(at file:line)`. A lint finding is about a line of the user's code, so it is annotated
there too: its second annotation. Each warning the same with `::warning`. Passes and skips
print nothing but the summary.
The same finding reported by several checks (finite_difference and gradcheck often agree)
is one annotation naming all of them: GitHub shows only the first ten errors of a step.
"""

from __future__ import annotations

from gradverify.report.evidence import explanation, relative_path
from gradverify.report.options import RenderOptions
from gradverify.results import Report, Result, Status, finding_key

COMMANDS = {Status.FAIL: "error", Status.WARN: "warning"}


def render(report: Report, options: RenderOptions | None = None) -> str:
    lines = [line for checks, result in _findings(report) for line in _commands(checks, result)]
    # Plain log lines, one each, never starting with `::`: a case name cannot inject a command.
    lines += [f"note: {' '.join(note.splitlines())}" for note in report.notes]
    lines.append(_summary(report))
    return "\n".join(lines) + "\n"


def escape_data(value: str) -> str:
    """A command's message, escaped as the Actions runner unescapes it."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A command's property value (file, title): as data, and `:` and `,` too."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def _findings(report: Report) -> list[tuple[list[str], Result]]:
    """Failures and warnings, one per finding, each with every check that reported it."""
    findings: dict[object, tuple[list[str], Result]] = {}
    keys: dict[tuple[str, str, str], object] = {}  # (target, case, check) -> its finding
    for index, result in enumerate(report.results):
        if result.status not in COMMANDS:
            continue
        # A result the engine marked as repeating an earlier check's finding joins it.
        repeated = keys.get((result.target, result.case, result.same_as or ""))
        finding = finding_key(result)
        # A warning and a failure that say the same thing are two annotations.
        key = (
            repeated
            if repeated is not None
            else (result.status, finding)
            if finding is not None
            else index
        )
        keys.setdefault((result.target, result.case, result.check), key)
        if key in findings:
            checks = findings[key][0]
            if result.check not in checks:  # a check's two results of one finding: named once
                checks.append(result.check)
        else:
            findings[key] = ([result.check], result)
    return list(findings.values())


def _commands(checks: list[str], result: Result) -> list[str]:
    """One annotation per finding (GitHub shows only the first ten of a step): at the spec
    line; a lint finding also at the line of the user's code it is about."""
    command = COMMANDS[result.status]
    title = f"gradverify {', '.join(checks)}: {result.target}[{result.case}]"
    places = [(result.spec_file, result.spec_line)]
    if result.rule is not None or result.spec_file is None:
        places.append((result.source_file, result.source_line))
    message = "\n".join(_message(result, code_in_place=len(places) > 1))
    annotations = [
        _line(command, message, file=relative_path(file), line=line, title=title)
        for file, line in places
        if file is not None
    ]
    return annotations or [_line(command, message, title=title)]


def _message(result: Result, code_in_place: bool) -> list[str]:
    """The explanation; where the user's code is known but not annotated, its first line
    ends `(at file:line)`, the place to open."""
    lines = explanation(result)
    if code_in_place or result.source_file is None:
        return lines
    code = relative_path(result.source_file)
    code += f":{result.source_line}" if result.source_line else ""
    first, *rest = lines
    if code not in first:  # a graph break's message already says where
        first += f" (at {code})"
    return [first, *(line for line in rest if line != f"source: {code}")]


def _line(command: str, message: str, **properties: str | int | None) -> str:
    given = ",".join(
        f"{name}={escape_property(str(value))}"
        for name, value in properties.items()
        if value is not None
    )
    return f"::{command} {given}::{escape_data(message)}"


def _summary(report: Report) -> str:
    summary = report.summary
    verdict = "FAILED" if not report.passed else "PASSED" if report.checked else "NOTHING CHECKED"
    return (
        f"gradverify {verdict}: {summary.targets} target(s), {summary.cases} case(s), "
        f"{summary.results} result(s): {summary.passed} passed, {summary.failed} failed, "
        f"{summary.skipped} skipped, {summary.not_applicable} not applicable, "
        f"{summary.warnings} warning(s)"
    )
