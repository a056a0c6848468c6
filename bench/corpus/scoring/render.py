"""The scoreboard as text: a table of every mode and part, then the dev part's details.

The held-out part is printed as totals only, never Function by Function.
"""

from __future__ import annotations

from collections import Counter

from scoring.tally import Outcome, Totals, failure_classes

HEADER = (
    f"{'mode':<12} {'part':<8} {'catches':>8} {'2nd order':>9} {'elsewhere':>9} {'missed':>6} "
    f"{'false alarms':>12} {'false results':>13} {'unchecked':>9} {'lines':>6} {'time':>7}"
)


def row(mode: str, part: str, totals: Totals) -> str:
    catches = f"{totals.caught}/{totals.buggy_first}"
    second = f"{totals.caught_second}/{totals.buggy_second}"
    alarms = f"{totals.false_alarm_functions}/{totals.sound}"
    return (
        f"{mode:<12} {part:<8} {catches:>8} {second:>9} {totals.elsewhere:>9} {totals.missed:>6} "
        f"{alarms:>12} {totals.false_results:>13} {totals.unchecked:>9} "
        f"{totals.report_lines:>6} {totals.seconds:>6.0f}s"
    )


def table(scores: dict[str, dict[str, tuple[list[Outcome], Totals]]]) -> list[str]:
    lines = [HEADER]
    for mode, parts in scores.items():
        lines.extend(row(mode, part, totals) for part, (_, totals) in parts.items())
    return lines


def details(mode: str, found: list[Outcome], limit: int = 12) -> list[str]:
    """The dev part's misses, misplaced catches, false alarms and unchecked Functions."""
    lines = []
    groups = (
        ("missed", "missed"),
        ("elsewhere", "failed, not on the bug's argument"),
        ("false_alarm", "false alarms"),
        ("unchecked", "unchecked"),
    )
    for verdict, title in groups:
        chosen = [o for o in found if o.verdict == verdict]
        if not chosen:
            continue
        lines.append(f"  {mode} dev, {title} ({len(chosen)}):")
        for o in chosen[:limit]:
            said = o.reason or ", ".join(o.checks)
            kind = f" [{o.kind}]" if o.kind else ""
            lines.append(f"    {o.target}{kind}  {said}")
        if len(chosen) > limit:
            lines.append(f"    … and {len(chosen) - limit} more (the JSON has them all)")
    return lines


def worst_classes(found: list[Outcome], count: int = 3) -> list[str]:
    classes: Counter[str] = failure_classes(found)
    return [f"    {n:>3}  {name}" for name, n in classes.most_common(count)]
