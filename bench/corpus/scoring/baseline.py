"""The committed baseline and the gate: catches may not drop, false alarms may not rise.

A catch is kept both as the Function caught and as each check that caught it, so that a change
which silences one check fails the gate even where another check still catches the same bug.

The dev part is kept Function by Function, so that a lost catch is named; the held-out part
only as totals, so that the baseline reveals no more of it than CI prints.
"""

from __future__ import annotations

import json
from pathlib import Path

from scoring.tally import Outcome, Totals

VERSION = 1


def snapshot(part: str, found: list[Outcome], totals: Totals) -> dict:
    """What the baseline keeps of a part in one mode."""
    kept: dict = {
        "caught": totals.caught,
        "catching_checks": sum(len(o.catching) for o in found),
        "caught_second": totals.caught_second,
        "false_alarm_functions": totals.false_alarm_functions,
        "false_results": totals.false_results,
    }
    if part == "dev":
        kept["caught_targets"] = sorted(o.target for o in found if o.verdict == "caught")
        kept["caught_second_targets"] = sorted(o.target for o in found if o.verdict == "caught2")
        kept["false_alarm_targets"] = sorted(o.target for o in found if o.verdict == "false_alarm")
        kept["catching_checks_targets"] = sorted(
            f"{o.target} by {check}" for o in found for check in o.catching
        )
    return kept


def compare(baseline: dict, now: dict) -> tuple[list[str], list[str]]:
    """(regressions, improvements) of `now` against `baseline`, both {mode: {part: snapshot}}.

    Only modes and parts present in both are compared.
    """
    regressions: list[str] = []
    improvements: list[str] = []
    for mode, parts in now.items():
        for part, current in parts.items():
            before = baseline.get("modes", {}).get(mode, {}).get(part)
            if before is None:
                continue
            where = f"{mode}/{part}"
            _catches(where, before, current, regressions, improvements)
            _alarms(where, before, current, regressions, improvements)
    return regressions, improvements


def _catches(where: str, before: dict, now: dict, worse: list[str], better: list[str]) -> None:
    for key, label in (
        ("caught", "catches"),
        ("caught_second", "second-order catches"),
        ("catching_checks", "catches by a check"),
    ):
        lost = sorted(set(before.get(f"{key}_targets", [])) - set(now.get(f"{key}_targets", [])))
        if lost:
            worse.append(f"{where}: {label} lost: {', '.join(lost)}")
        elif now.get(key, 0) < before.get(key, 0):
            worse.append(f"{where}: {label} dropped from {before[key]} to {now[key]}")
        if now.get(key, 0) > before.get(key, 0):
            better.append(f"{where}: {label} rose from {before[key]} to {now[key]}")


def _alarms(where: str, before: dict, now: dict, worse: list[str], better: list[str]) -> None:
    new = sorted(
        set(now.get("false_alarm_targets", [])) - set(before.get("false_alarm_targets", []))
    )
    for key, label in (
        ("false_alarm_functions", "Functions with false alarms"),
        ("false_results", "false failing results"),
    ):
        if now[key] > before[key]:
            named = f" (new: {', '.join(new)})" if new and key == "false_alarm_functions" else ""
            worse.append(f"{where}: {label} rose from {before[key]} to {now[key]}{named}")
        elif now[key] < before[key]:
            better.append(f"{where}: {label} fell from {before[key]} to {now[key]}")
    if new and now["false_alarm_functions"] <= before["false_alarm_functions"]:
        worse.append(f"{where}: new false alarms: {', '.join(new)}")


def read(path: Path) -> dict:
    if not path.is_file():
        return {"version": VERSION, "modes": {}}
    return json.loads(path.read_text(encoding="utf-8"))


def write(path: Path, baseline: dict, now: dict) -> None:
    """The baseline with `now`'s modes and parts replaced."""
    modes = baseline.setdefault("modes", {})
    for mode, parts in now.items():
        modes.setdefault(mode, {}).update(parts)
    baseline["version"] = VERSION
    path.write_text(json.dumps(baseline, indent=2, sort_keys=True) + "\n", encoding="utf-8")
