"""Record what gradverify says about a fixed set of specs, and compare two records.

A refactoring that moves code must not change a verdict, a message or a location. Record
before the first move, record after the last, compare:

    python bench/same_behaviour.py record before.json
    ... move code ...
    python bench/same_behaviour.py record after.json
    python bench/same_behaviour.py compare before.json after.json

`record out.json --mode randomized` records every case in randomized mode (random
projections and group testing, which the bundled specs' small inputs never reach by
themselves): the record for a change to the localizer.

The record is the JSON report of `gradverify check --no-cache` on the bundled specs and the
test suite's own spec fixtures, with what varies from run to run (timings, the checkout's
path) removed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC_PATHS = [
    "specs",
    *sorted(
        str(path)
        for path in (ROOT / "tests/specs/checks").glob("*.yaml")
        if path.name != "scale_like.yaml"
    ),
    "tests/specs/valid",
    "tests/specs/bugs.yaml",
    "tests/specs/processes/two_correct.yaml",
]
VARYING = {"seconds"}


def record(options: Sequence[str] = ()) -> dict[str, Any]:
    command = [sys.executable, "-m", "gradverify", "check", *SPEC_PATHS]
    command += ["--format", "json", "--no-cache", *options]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if completed.returncode not in (0, 1):
        sys.exit(f"gradverify exited {completed.returncode}:\n{completed.stderr}")
    report = json.loads(completed.stdout)
    return {"exit_code": completed.returncode, "report": _without_timings(report)}


def _without_timings(value: Any) -> Any:
    """The report without timings, and with the checkout's own path as <root> (so that two
    checkouts of one tree compare equal)."""
    if isinstance(value, dict):
        return {key: _without_timings(item) for key, item in value.items() if key not in VARYING}
    if isinstance(value, list):
        return [_without_timings(item) for item in value]
    if isinstance(value, str):
        return value.replace(str(ROOT), "<root>")
    return value


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Every difference between two records, one line each (empty when they agree)."""
    differences = []
    if before["exit_code"] != after["exit_code"]:
        differences.append(f"exit code {before['exit_code']} -> {after['exit_code']}")
    if before["report"].get("summary") != after["report"].get("summary"):
        differences.append(f"summary {before['report']['summary']} -> {after['report']['summary']}")
    old = {_key(result): result for result in before["report"]["results"]}
    new = {_key(result): result for result in after["report"]["results"]}
    for key in sorted(old.keys() | new.keys()):
        if key not in new or key not in old:
            differences.append(f"{key}: {'gone' if key not in new else 'new'}")
            continue
        for field in sorted(old[key].keys() | new[key].keys()):
            if old[key].get(field) != new[key].get(field):
                differences.append(
                    f"{key} {field}: {old[key].get(field)!r} -> {new[key].get(field)!r}"
                )
    return differences


def _key(result: dict[str, Any]) -> str:
    return f"{result['target']} / {result['case']} / {result['check']}"


def main(arguments: list[str]) -> int:
    if len(arguments) in (2, 4) and arguments[0] == "record" and arguments[2:3] in ([], ["--mode"]):
        recorded = record(arguments[2:])
        Path(arguments[1]).write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        return 0
    if len(arguments) == 3 and arguments[0] == "compare":
        before, after = (json.loads(Path(name).read_text()) for name in arguments[1:])
        differences = compare(before, after)
        print("\n".join(differences) or "identical")
        return 1 if differences else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
