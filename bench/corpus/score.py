"""Score gradverify's modes on the corpus (or on real packages) against their truth.

    python bench/corpus/score.py                         every mode, both parts
    python bench/corpus/score.py --modes zero-config --check    CI: compare with baseline.json
    python bench/corpus/score.py --modes zero-config --write-baseline
    python bench/corpus/score.py --packages              real packages (packages.yaml)

The held-out part is printed and written as totals only; `--reveal-heldout FILE` writes its
Function-by-Function outcomes to FILE, to be read once at the end of an issue.
Exit codes: 0 scored, 1 worse than the baseline (with --check), 2 a manifest that does not read.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scoring import baseline, manifest, modes, render, tally

BASELINE = manifest.CORPUS / "baseline.json"
PACKAGES_BASELINE = manifest.CORPUS / "packages-baseline.json"


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(modes.MODES), help="comma-separated modes")
    parser.add_argument("--parts", default="dev,heldout", help="comma-separated parts")
    parser.add_argument("--packages", action="store_true", help="score packages.yaml instead")
    parser.add_argument("--json", type=Path, help="write the score as JSON to this file")
    parser.add_argument("--check", action="store_true", help="fail when worse than the baseline")
    parser.add_argument("--write-baseline", action="store_true", help="make this the baseline")
    parser.add_argument("--reveal-heldout", type=Path, help="held-out outcomes to this file")
    parser.add_argument("--workdir", type=Path, help="keep each mode's specs and reports here")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    return parser.parse_args(argv)


def _functions(args: argparse.Namespace) -> tuple[list[manifest.Function], dict[str, list[str]]]:
    """The Functions to score, and for packages the usage command per module."""
    parts = args.parts.split(",")
    if not args.packages:
        functions = manifest.load(parts)
        found = manifest.problems(functions)
        if found:
            raise manifest.ManifestError("\n".join(found))
        return functions, {}
    packages, functions = manifest.load_packages()
    usage = {}
    for package in packages:
        if package.usage:
            for function in functions:
                if function.module.split(".")[0] == package.package:
                    usage[function.module] = [sys.executable, str(manifest.CORPUS / package.usage)]
    return [f for f in functions if f.part in parts and f.truth != "unjudged"], usage


def score(args: argparse.Namespace, workdir: Path) -> dict[str, dict[str, tuple]]:
    """{mode: {part: (outcomes, totals)}} for every mode and part asked for."""
    functions, usage = _functions(args)
    tool = modes.default_tool(args.jobs)
    scores: dict[str, dict[str, tuple]] = {}
    for mode in args.modes.split(","):
        runner = modes.RUNNERS[mode]
        for part in args.parts.split(","):
            chosen = [f for f in functions if f.part == part]
            if not chosen:
                continue
            place = workdir / mode / part
            place.mkdir(parents=True, exist_ok=True)
            print(f"scoring {mode} on {part} ({len(chosen)} Functions)…", file=sys.stderr)
            extra = {"usage": usage.__getitem__} if mode == "record" and usage else {}
            run = runner(tool, part, chosen, place, **extra)
            found = tally.outcomes(run, chosen)
            scores.setdefault(mode, {})[part] = (found, tally.totals(run, found))
    return scores


def _report(scores: dict[str, dict[str, tuple]]) -> None:
    print("\n".join(render.table(scores)))
    for mode, parts in scores.items():
        if "dev" in parts:
            found, _ = parts["dev"]
            lines = render.details(mode, found)
            if lines:
                print()
                print("\n".join(lines))
                print(f"  {mode} dev, the worst failure classes:")
                print("\n".join(render.worst_classes(found)))


def _document(scores: dict[str, dict[str, tuple]], reveal: bool) -> dict:
    document: dict = {"modes": {}}
    for mode, parts in scores.items():
        for part, (found, totals) in parts.items():
            kept: dict = {"totals": totals.as_dict()}
            if part == "dev" or reveal:
                kept["functions"] = [asdict(o) for o in found]
                kept["worst_classes"] = dict(tally.failure_classes(found).most_common())
            document["modes"].setdefault(mode, {})[part] = kept
    return document


def main(argv: list[str]) -> int:
    args = _arguments(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="gradverify-score-") as scratch:
            scores = score(args, args.workdir or Path(scratch))
    except manifest.ManifestError as error:
        print(f"score: {error}", file=sys.stderr)
        return 2
    _report(scores)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(_document(scores, False), indent=2) + "\n")
    if args.reveal_heldout:
        args.reveal_heldout.write_text(json.dumps(_document(scores, True), indent=2) + "\n")
    snapshots = {
        mode: {part: baseline.snapshot(part, *pair) for part, pair in parts.items()}
        for mode, parts in scores.items()
    }
    path = PACKAGES_BASELINE if args.packages else BASELINE
    if args.write_baseline:
        baseline.write(path, baseline.read(path), snapshots)
        print(f"\nbaseline written: {path.name}")
    if args.check:
        regressions, improvements = baseline.compare(baseline.read(path), snapshots)
        for line in improvements:
            print(f"better than the baseline: {line}")
        if improvements and not regressions:
            print("raise the baseline in a commit of its own that says why (make score-baseline)")
        if regressions:
            print("\nworse than the baseline:")
            print("\n".join(f"  {line}" for line in regressions))
            return 1
        print("\nno catch lost and no false alarm added against the baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
