"""Gradient coverage in the text report: how each Function and op of a package got its inputs."""

from __future__ import annotations

from rich.console import RenderableType
from rich.padding import Padding
from rich.text import Text

from gradverify.report.lines import plural
from gradverify.report.reasons import one_line
from gradverify.results import Coverage

INDENT = "  "


def coverage_lines(coverage: Coverage) -> list[tuple[RenderableType, str | None]]:
    """`gradient coverage: 23 Functions: 18 with specs, 3 inferred, 2 without inputs`, then
    the Functions left unchecked with why (in one line), and those --require-specs fails
    for; each line with the Function whose reason it is (a report over its budget may leave
    reasons out), else None."""
    without = len(coverage.without_inputs)
    head = Text("gradient coverage: ", style="bold")
    head.append(f"{_counted(coverage)}: ")
    head.append(f"{len(coverage.with_specs)} with specs", style="green")
    head.append(f", {len(coverage.inferred)} inferred, ")
    head.append(
        f"{without} without inputs" + (" (record or write a spec)" if without else ""),
        style="yellow" if without else "",
    )
    lines: list[tuple[RenderableType, str | None]] = [(head, None)]
    if without:
        lines.append((Text(f"{INDENT}without inputs, not checked:"), None))
        for uncovered in coverage.without_inputs:
            lines.append((Text(f"{INDENT * 2}{uncovered.target}", style="yellow"), None))
            reason = Padding(Text(one_line(uncovered.reason)), (0, 0, 0, len(INDENT) * 3))
            lines.append((reason, uncovered.target))
    if coverage.failed:
        unspecified = coverage.unspecified
        said = (
            f"--require-specs: {len(unspecified)} without a spec (`gradverify record -- "
            "COMMAND` or `gradverify init TARGET` writes one):"
        )
        lines.append((Text(said, style="bold red"), None))
        lines.extend((Text(f"{INDENT * 2}{target}", style="red"), None) for target in unspecified)
    return lines


def _counted(coverage: Coverage) -> str:
    functions = coverage.functions - coverage.ops
    if not coverage.ops:
        return plural(functions, "Function")
    return f"{plural(functions, 'Function')} and {plural(coverage.ops, 'custom op')}"
