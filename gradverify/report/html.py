"""`--format html`: one self-contained page, meant as a CI artifact.

A summary first, then a table of contents that jumps to each case with findings (failures
first, each marked) and to the passing cases; then one section per failure and per warning
under its case, with the evidence and, for a 1-D or 2-D argument, the mismatch map as a
grid of coloured cells; the passing cases last, one line each. The first case of a Function
that passed a check as a surrogate says what that covered, once. Inline CSS only: no
script, no font, no image, no link to fetch, so the file reads the same when opened from a
CI run's artifacts offline.
Every piece of text that comes from the user's code or specs is escaped. The markup is
also well-formed XML (void elements closed), which keeps it checkable by any parser.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from html import escape
from itertools import groupby

from gradverify.report.evidence import argument, evidence, relative_path
from gradverify.report.options import RenderOptions
from gradverify.report.surrogates import covered
from gradverify.results import Report, Result, Status, finding_key

FINDINGS = (Status.FAIL, Status.WARN)
CELLS = {"x": "wrong", ".": "right", " ": "unexamined"}

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #1f2328; margin: 2em auto;
       max-width: 72em; padding: 0 1em; }
h1 { font-size: 1.5em; margin: 0 0 .3em; }
h2 { font-size: 1.15em; margin: 1.6em 0 .4em; }
h3 { font-size: 1em; margin: 0 0 .4em; }
code, pre, dd, .message { font-family: ui-monospace, monospace; font-size: 13px; }
.verdict { font-weight: bold; padding: .1em .5em; border-radius: 4px; color: #fff; }
.verdict.passed { background: #1a7f37; }
.verdict.failed { background: #cf222e; }
.verdict.nothing { background: #9a6700; }
.location, .counts, .muted { color: #59636e; font-weight: normal; }
section.finding { border-left: 4px solid; padding: .6em 1em; margin: .8em 0;
                  background: #f6f8fa; }
section.finding.fail { border-color: #cf222e; }
section.finding.warn { border-color: #9a6700; }
.status { text-transform: uppercase; font-size: .8em; font-weight: bold; }
.fail .status { color: #cf222e; }
.warn .status { color: #9a6700; }
.message { white-space: pre-wrap; margin: 0 0 .6em; }
dl.evidence { display: grid; grid-template-columns: max-content 1fr; gap: .15em 1.2em;
              margin: 0; }
dl.evidence dt { font-weight: bold; }
dl.evidence dd { margin: 0; white-space: pre-wrap; }
pre.details { background: #fff; border: 1px solid #d1d9e0; padding: .5em; overflow-x: auto; }
figure.map { margin: .8em 0 0; overflow-x: auto; }
figure.map figcaption { margin-bottom: .3em; }
table.mismatch-map { border-collapse: collapse; }
table.mismatch-map th { font: 10px ui-monospace, monospace; color: #59636e; padding: 0 2px;
                        text-align: right; vertical-align: bottom; }
table.mismatch-map thead th { position: relative; height: 13px; min-width: 14px; padding: 0; }
table.mismatch-map thead th span { position: absolute; left: 1px; bottom: 0; }
table.mismatch-map td { width: 14px; height: 14px; padding: 0; border: 1px solid #fff; }
.wrong { background: #cf222e; }
.right { background: #aceebb; }
.unexamined { background: #fff; outline: 1px solid #d1d9e0; outline-offset: -1px; }
.legend span.cell { display: inline-block; width: 14px; height: 14px; vertical-align: middle; margin: 0 .3em 0 1em; }
.legend span.cell:first-child { margin-left: 0; }
ul.passing { padding-left: 1.2em; }
nav.contents ol { padding-left: 1.2em; columns: 2 28em; }
nav.contents li.fail::marker { color: #cf222e; }
nav.contents li.warn::marker { color: #9a6700; }
a.top { font-size: .8em; font-weight: normal; margin-left: .6em; }
"""
MARKS = {Status.FAIL: "✗", Status.WARN: "!"}


def render(report: Report, options: RenderOptions) -> str:
    """The report as one HTML page."""
    cases: list[str] = []
    contents: list[tuple[Status, str]] = []
    passing: list[str] = []
    said: set[tuple[str, str]] = set()  # (target, what a surrogate's pass covered)
    for (target, case), group in groupby(report.results, key=lambda r: (r.target, r.case)):
        results = list(group)
        surrogates = [s for s in covered(results) if (target, s) not in said]
        said.update((target, s) for s in surrogates)
        if any(result.status in FINDINGS for result in results):
            anchor = f"case-{len(cases) + 1}"
            cases.append(_case(target, case, results, anchor, surrogates))
            contents.append(_contents_line(target, case, results, anchor))
        else:
            passing.append(_passing_line(target, case, results, surrogates))
    listed = bool(passing) and not options.quiet
    verdict = "FAILED" if not report.passed else "PASSED" if report.checked else "NOTHING CHECKED"
    css = verdict.split()[0].lower()  # passed, failed, nothing
    body = [
        '<header id="top">',
        "<h1>gradverify report</h1>",
        f'<p><span class="verdict {css}">{verdict}</span> {_summary(report)}</p>',
        "</header>",
    ]
    if report.notes:
        body += ['<ul class="notes">', *(f"<li>{escape(n)}</li>" for n in report.notes), "</ul>"]
    body += _contents(contents, len(passing) if listed else 0)
    body += cases
    if listed:
        body += [f'<h2 id="passing">Passing cases ({len(passing)})</h2>', '<ul class="passing">']
        body += [*passing, "</ul>"]
    page = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8" />',
        '<meta name="viewport" content="width=device-width, initial-scale=1" />',
        f"<title>gradverify: {verdict}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        *body,
        "</body>",
        "</html>",
    ]
    return "\n".join(page) + "\n"


def _summary(report: Report) -> str:
    summary = report.summary
    text = (
        f"{summary.targets} target(s), {summary.cases} case(s), {summary.results} result(s): "
        f"{summary.passed} passed, {summary.failed} failed, {summary.skipped} skipped, "
        f"{summary.not_applicable} not applicable, {summary.warnings} warning(s)"
    )
    return escape(text)


def _contents_line(
    target: str, case: str, results: Sequence[Result], anchor: str
) -> tuple[Status, str]:
    """A case with findings as a line of the table of contents, and its worst status."""
    status = Status.FAIL if any(r.failed for r in results) else Status.WARN
    link = (
        f'<a href="#{anchor}">{MARKS[status]} <code>{escape(target)}</code> case '
        f"<code>{escape(case)}</code></a>"
    )
    counts = f' <span class="counts">{escape(_counts(results))}</span>'
    return status, f'<li class="{status.value}">{link}{counts}</li>'


def _contents(lines: Sequence[tuple[Status, str]], passing: int) -> list[str]:
    """Jump links: the cases that failed first, then those that only warn, then the rest."""
    if not lines:
        return []
    ordered = [line for status in FINDINGS for found, line in lines if found is status]
    if passing:
        ordered.append(f'<li><a href="#passing">Passing cases ({passing})</a></li>')
    return ['<nav class="contents">', "<h2>Contents</h2>", "<ol>", *ordered, "</ol>", "</nav>"]


def _case(
    target: str, case: str, results: Sequence[Result], anchor: str, surrogates: Sequence[str]
) -> str:
    """A case with findings: its heading, one section per finding, the other checks named."""
    location = _location(results[0])
    parts = [
        f'<article class="case" id="{anchor}">',
        f"<h2><code>{escape(target)}</code> case <code>{escape(case)}</code>"
        + (f' <span class="location">{escape(location)}</span>' if location else "")
        + ' <a class="top" href="#top">contents</a>'
        + "</h2>",
        f'<p class="counts">{escape(_counts(results))}</p>',
        *(f'<p class="muted">surrogate: {escape(said)}</p>' for said in surrogates),
    ]
    shown: dict[tuple[object, ...], str] = {}
    for result in results:
        if result.status not in FINDINGS:
            continue
        finding = finding_key(result)
        same_as = result.same_as or (shown.get(finding) if finding is not None else None)
        parts.append(_section(result, same_as))
        if finding is not None:
            shown.setdefault(finding, result.check)
    others = [r for r in results if r.status not in FINDINGS and r.applies]
    for status in (Status.PASS, Status.SKIP):
        checks = _named_once([r.check for r in others if r.status is status])
        if checks:
            parts.append(f'<p class="muted">{status.value}: {escape(checks)}</p>')
    parts.append("</article>")
    return "\n".join(parts)


def _named_once(checks: Sequence[str]) -> str:
    """`finite_difference ×3, gradcheck`: each check once, with how many results it gave."""
    counts = Counter(checks)
    return ", ".join(f"{check} ×{n}" if n > 1 else check for check, n in counts.items())


def _section(result: Result, same_as: str | None) -> str:
    """One failure or warning: what, where, the evidence, the map and the details."""
    status = result.status.value
    subject = f" · argument {argument(result)}" if result.input_index is not None else ""
    parts = [
        f'<section class="finding {status}">',
        f'<h3><span class="status">{status}</span> {escape(result.check + subject)}</h3>',
        f'<p class="message">{escape(result.message)}</p>',
    ]
    if same_as is not None:
        parts.append(f'<p class="muted">the same finding as {escape(same_as)}</p>')
        return "\n".join([*parts, "</section>"])
    rows = [
        f"<dt>{escape(label)}</dt><dd>{escape(value)}</dd>" for label, value in evidence(result)
    ]
    if rows:
        parts += ['<dl class="evidence">', *rows, "</dl>"]
    if result.mismatch_map:
        parts.append(map_figure(result.mismatch_map))
    if result.details:
        parts.append(f'<pre class="details">{escape(chr(10).join(result.details))}</pre>')
    parts.append("</section>")
    return "\n".join(parts)


def map_figure(rows: Sequence[str]) -> str:
    """A mismatch map as a table of cells, one per element, coloured by state."""
    columns = max(len(row) for row in rows)
    two_d = len(rows) > 1
    step = 1 if columns <= 20 else 5 if columns <= 50 else 10
    header = "".join(
        f'<th scope="col"><span>{column}</span></th>' if column % step == 0 else "<th></th>"
        for column in range(columns)
    )
    row_step = 1 if len(rows) <= 20 else 5
    body = [
        f'<tr><th scope="row">{row_index if two_d and row_index % row_step == 0 else ""}</th>'
        + "".join(_cell(row_index, column, cell, two_d) for column, cell in enumerate(row))
        + "</tr>"
        for row_index, row in enumerate(rows)
    ]
    shape = f"{len(rows)} rows × {columns} columns" if two_d else f"{columns} elements"
    states = {CELLS.get(cell, "unexamined") for row in rows for cell in row}
    legend = "".join(
        f'<span class="cell {state}"></span>{_LEGEND[state]}'
        for state in CELLS.values()
        if state in states
    )
    return "\n".join(
        [
            '<figure class="map">',
            f"<figcaption>where the wrong entries lie ({shape})</figcaption>",
            '<table class="mismatch-map">',
            f"<thead><tr><th></th>{header}</tr></thead>",
            "<tbody>",
            *body,
            "</tbody>",
            "</table>",
            f'<p class="legend">{legend}</p>',
            "</figure>",
        ]
    )


_LEGEND = {"wrong": "wrong", "right": "right", "unexamined": "not examined one by one"}


def _cell(row: int, column: int, cell: str, two_d: bool) -> str:
    state = CELLS.get(cell, "unexamined")
    element = f"[{row}, {column}]" if two_d else f"[{column}]"
    return f'<td class="{state}" data-element="{element}" title="{element} {state}"></td>'


def _passing_line(
    target: str, case: str, results: Sequence[Result], surrogates: Sequence[str]
) -> str:
    seconds = sum(result.seconds for result in results)
    cached = " (cached)" if results and all(result.cached for result in results) else ""
    said = "".join(
        f'<br /><span class="muted">surrogate: {escape(line)}</span>' for line in surrogates
    )
    return (
        f"<li><code>{escape(target)}</code> case <code>{escape(case)}</code>: "
        f"{escape(_counts(results))}, {seconds:.2f} s{cached}{said}</li>"
    )


def _counts(results: Iterable[Result]) -> str:
    applying = [result for result in results if result.applies]
    counts = {status: sum(1 for r in applying if r.status is status) for status in Status}
    words = {Status.PASS: "passed", Status.FAIL: "failed", Status.SKIP: "skipped"}
    parts = [f"{counts[status]} {word}" for status, word in words.items() if counts[status]]
    if counts[Status.WARN]:
        parts.append(f"{counts[Status.WARN]} warning(s)")
    return ", ".join(parts) or "no checks"


def _location(result: Result) -> str:
    if result.spec_file is None:
        return ""
    file = relative_path(result.spec_file)
    return f"{file}:{result.spec_line}" if result.spec_line else file
