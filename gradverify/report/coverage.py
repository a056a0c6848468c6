"""Gradient coverage in the text report: how each Function and op of a package got its inputs."""

from __future__ import annotations

from rich.console import RenderableType
from rich.padding import Padding
from rich.text import Text

from gradverify.report.lines import plural
from gradverify.results import Coverage

INDENT = "  "


def coverage_lines(coverage: Coverage) -> list[RenderableType]:
    """`gradient coverage: 23 Functions: 18 with specs, 3 inferred, 2 without inputs`, then
    the Functions left unchecked with why, and those --require-specs fails for."""
    without = len(coverage.without_inputs)
    head = Text("gradient coverage: ", style="bold")
    head.append(f"{_counted(coverage)}: ")
    head.append(f"{len(coverage.with_specs)} with specs", style="green")
    head.append(f", {len(coverage.inferred)} inferred, ")
    head.append(
        f"{without} without inputs" + (" (record or write a spec)" if without else ""),
        style="yellow" if without else "",
    )
    lines: list[RenderableType] = [head]
    if without:
        lines.append(Text(f"{INDENT}without inputs, not checked:"))
        for uncovered in coverage.without_inputs:
            lines.append(Text(f"{INDENT * 2}{uncovered.target}", style="yellow"))
            lines.append(Padding(Text(uncovered.reason), (0, 0, 0, len(INDENT) * 3)))
    if coverage.failed:
        unspecified = coverage.unspecified
        lines.append(
            Text(
                f"--require-specs: {len(unspecified)} without a spec (`gradverify record -- "
                "COMMAND` or `gradverify init TARGET` writes one):",
                style="bold red",
            )
        )
        lines.extend(Text(f"{INDENT * 2}{target}", style="red") for target in unspecified)
    return lines


def _counted(coverage: Coverage) -> str:
    functions = coverage.functions - coverage.ops
    if not coverage.ops:
        return plural(functions, "Function")
    return f"{plural(functions, 'Function')} and {plural(coverage.ops, 'custom op')}"
