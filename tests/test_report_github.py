"""`--format github`: workflow commands, read back the way the Actions runner reads them.

`parse` follows the runner's own parser (actions/runner, src/Runner.Common/ActionCommand.cs,
`TryParseV2` with `UnescapeProperty` and `UnescapeData`): the command ends at the first
`::` after the leading one, properties split on `,` and then on the first `=`, and the
escapes are undone in the runner's order, `%25` last.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from gradverify.report import RenderOptions, github
from gradverify.results import Report, Result, Status

DATA_ESCAPES = [("\r", "%0D"), ("\n", "%0A"), ("%", "%25")]
PROPERTY_ESCAPES = [("\r", "%0D"), ("\n", "%0A"), (":", "%3A"), (",", "%2C"), ("%", "%25")]


@dataclass
class Command:
    name: str
    data: str
    properties: dict[str, str] = field(default_factory=dict)


def unescape(value: str, escapes: list[tuple[str, str]]) -> str:
    for token, replacement in escapes:
        value = value.replace(replacement, token)
    return value


def parse(output: str) -> list[Command]:
    """Every line the runner takes for a command (the other lines are plain log)."""
    commands = []
    for line in output.splitlines():
        line = line.lstrip()
        end = line.find("::", 2)
        if not line.startswith("::") or end < 0:
            continue
        info = line[2:end]
        name, _, properties = info.partition(" ")
        command = Command(name, unescape(line[end + 2 :], DATA_ESCAPES))
        for pair in filter(None, properties.strip().split(",")):
            key, equals, value = pair.partition("=")
            if equals and key and value:
                command.properties[key] = unescape(value, PROPERTY_ESCAPES)
        commands.append(command)
    return commands


def render(report: Report) -> str:
    return github.render(report, RenderOptions())


def make(status: Status = Status.FAIL, **fields: object) -> Result:
    defaults: dict[str, object] = {
        "target": "pkg.ops:Fn",
        "case": "vector",
        "check": "backward",
        "spec_file": "specs/ops.yaml",
        "spec_line": 7,
    }
    return Result(status=status, **{**defaults, **fields})


def test_escaping_is_the_runners():
    assert github.escape_data("100%: a, b\r\nc") == "100%25: a, b%0D%0Ac"
    assert github.escape_property("100%: a, b\r\nc") == "100%25%3A a%2C b%0D%0Ac"
    assert github.escape_data("%0A stays literal") == "%250A stays literal"


def test_messages_and_titles_survive_the_runners_parser():
    message = "50% off: a, b,\nsecond line %0A (literal) :: not a separator\r\nthird"
    result = make(
        message=message, target="pkg.ops:Fn", case="a,b: c", spec_file="specs/x,y: z.yaml"
    )
    output = render(Report((result,)))
    (command,) = parse(output)
    assert command.name == "error"
    assert command.data == f"{message}\nspec: specs/x,y: z.yaml:7"
    assert command.properties == {
        "file": "specs/x,y: z.yaml",
        "line": "7",
        "title": "gradverify backward: pkg.ops:Fn[a,b: c]",
    }
    assert sum(line.startswith("::") for line in output.splitlines()) == 1  # no raw newline


def test_a_failure_points_at_the_spec_line_and_at_the_users_code(bugs_report, in_repo, only):
    finding = only(bugs_report, check="lint", rule="GV104", status="fail")
    commands = [
        command
        for command in parse(render(bugs_report))
        if command.properties["title"].startswith("gradverify lint:")
        and finding.target in command.properties["title"]
    ]
    places = [(c.properties["file"], c.properties["line"]) for c in commands]
    assert places == [
        ("tests/specs/bugs.yaml", str(finding.spec_line)),
        ("tests/functions/structural_bugs.py", str(finding.source_line)),  # relative, as given
    ]
    assert all(command.name == "error" for command in commands)
    assert commands[0].data.startswith(finding.message)
    assert f"likely cause: {finding.hint}" in commands[0].data


def test_one_annotation_per_finding_naming_every_check_that_found_it(buggy_report, in_repo):
    commands = parse(render(buggy_report))
    beta = [c for c in commands if "argument: 1 (beta)" in c.data and c.name == "error"]
    # finite_difference and gradcheck agree: one finding, one annotation at the spec's case
    # whose message says where the user's backward is.
    (command,) = beta
    assert command.properties["title"].startswith("gradverify finite_difference, gradcheck: ")
    assert command.properties["file"] == "specs/buggy.yaml"
    (finding,) = [
        r
        for r in buggy_report.results
        if r.check == "finite_difference" and r.input_name == "beta" and r.failed
    ]
    first_line = command.data.splitlines()[0]
    assert (
        first_line == f"{finding.message} (at gradverify/examples/buggy.py:{finding.source_line})"
    )
    failures = {(r.target, r.case) for r in buggy_report.results if r.failed}
    assert {c.properties["title"].split(": ", 1)[1] for c in commands if c.name == "error"} == {
        f"{target}[{case}]" for target, case in failures
    }


def test_warnings_warn_and_passes_and_skips_say_nothing():
    report = Report(
        (
            make(Status.PASS),
            make(Status.SKIP, message="no CUDA"),
            make(Status.WARN, check="layouts", message="wasted work"),
        )
    )
    output = render(report)
    assert [(c.name, c.data) for c in parse(output)] == [
        ("warning", "wasted work\nspec: specs/ops.yaml:7")
    ]
    assert output.splitlines()[-1].startswith("gradverify PASSED: 1 target(s), 1 case(s)")


def test_a_result_marked_as_the_same_finding_joins_the_earlier_checks_annotation():
    # opcheck fails on a wrong fake; compile's tracing error is marked the same finding
    report = Report(
        (
            make(check="opcheck", message="test_faketensor fails"),
            make(Status.WARN, check="compile", message="cannot trace it", same_as="opcheck"),
            make(Status.WARN, check="compile", case="other", message="graph break"),
        )
    )
    commands = parse(render(report))
    assert [(c.name, c.properties["title"]) for c in commands] == [
        ("error", "gradverify opcheck, compile: pkg.ops:Fn[vector]"),
        ("warning", "gradverify compile: pkg.ops:Fn[other]"),
    ]


def test_a_check_with_two_results_of_one_finding_is_named_once_in_the_title():
    # gradcheck's finding on the real and on the imaginary part of one complex argument
    report = Report(
        (
            make(check="finite_difference", message="conjugate missing", same_as=None),
            make(check="gradcheck", message="real part", same_as="finite_difference"),
            make(check="gradcheck", message="imaginary part", same_as="finite_difference"),
        )
    )
    commands = parse(render(report))
    assert [c.properties["title"] for c in commands] == [
        "gradverify finite_difference, gradcheck: pkg.ops:Fn[vector]"
    ]


def test_a_result_without_a_spec_file_is_annotated_without_a_location():
    (command,) = parse(render(Report((make(spec_file=None, spec_line=None, message="boom"),))))
    assert command.properties == {"title": "gradverify backward: pkg.ops:Fn[vector]"}


@pytest.mark.parametrize("note", ["pkg [x]: ::error::injected", "first\n::error::injected"])
def test_notes_and_case_names_cannot_inject_commands(note):
    report = Report((make(Status.PASS, case="::error::x"),), notes=(note,))
    assert parse(render(report)) == []


def test_paths_are_relative_to_the_current_directory_when_below_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inside = str(tmp_path / "pkg" / "ops.py")
    result = make(
        check="lint",
        rule="GV104",
        spec_file=str(tmp_path / "specs" / "ops.yaml"),
        source_file=inside,
        source_line=3,
    )
    outside = make(spec_file="/elsewhere/ops.yaml", case="other")
    commands = parse(render(Report((result, outside))))
    assert [c.properties.get("file") for c in commands] == [
        "specs/ops.yaml",
        "pkg/ops.py",
        "/elsewhere/ops.yaml",
    ]


def _findings(report: Report) -> list[Result]:
    """The failures and warnings that are findings of their own (not repeating another)."""
    return [
        r
        for r in report.results
        if r.status in (Status.FAIL, Status.WARN)
        and r.same_as is None
        and not any(
            other.check != r.check
            and (other.target, other.case) == (r.target, r.case)
            and other.status is r.status
            and other.analytical is not None
            and (other.input_index, other.element, repr(other.analytical))
            == (r.input_index, r.element, repr(r.analytical))
            and report.results.index(other) < report.results.index(r)
            for other in report.results
        )
    ]


@pytest.mark.parametrize("fixture", ["buggy_report", "bugs_report"])
def test_one_annotation_per_finding_two_for_lint_findings(fixture, request, in_repo):
    """GitHub shows ten errors of a step: a finding about backward is one annotation, at
    the spec line; only a lint finding, about a line of the user's code, is also there."""
    report = request.getfixturevalue(fixture)
    findings = _findings(report)
    commands = parse(render(report))
    assert len(commands) == sum(2 if r.rule is not None else 1 for r in findings)
    located = [r for r in findings if r.rule is None and r.source_file is not None]
    assert located  # findings about backward, which know backward's line
    for finding in located:
        title = f"{finding.target}[{finding.case}]"
        (command,) = [
            c
            for c in commands
            if c.properties["title"].endswith(title) and c.data.startswith(finding.message)
        ]
        assert command.properties["line"] == str(finding.spec_line)
        code = f"{github.relative_path(finding.source_file)}:{finding.source_line}"
        assert command.data.splitlines()[0].endswith(f" (at {code})")
