"""--verbose in the text report: every check of a case, as a table."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from gradverify.report.lines import MARKS, STYLES, location
from gradverify.results import Result, Status

QUIET = (Status.PASS, Status.SKIP)  # what --quiet leaves out of the verbose table


def case_table(target: str, case: str, results: list[Result], quiet: bool) -> Table:
    where = location(results[0])
    title = Text.assemble(
        (target, "bold"), "  case ", (case, "bold"), (f"  {where}" if where else "", "dim")
    )
    table = Table(
        title=title, title_justify="left", show_header=False, box=None, padding=(0, 1), expand=False
    )
    table.add_column("mark", width=1)
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column("message", overflow="fold")
    for result in results:
        if quiet and result.status in QUIET:
            continue
        style = STYLES[result.status]
        table.add_row(
            Text(MARKS[result.status], style=style),
            result.check,
            Text(result.status.value + (" (cached)" if result.cached else ""), style=style),
            f"{result.seconds:.2f}s",
            Text(_headline(result)),  # Text: user code in messages is not Rich markup
        )
    return table


def _headline(result: Result) -> str:
    """A table row's message: a finding's headline (its panel has the rest), else whole."""
    finding = result.status in (Status.FAIL, Status.WARN) and result.same_as is None
    if finding and result.input_name is not None and ": " in result.message:
        return result.message.split(": ", 1)[0]
    return result.message
