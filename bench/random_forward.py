"""What judging a random forward's backward in expectation costs (engine/random_forward.py).

Each target runs in this process with the judging on (as shipped) and off (failures left as
they are), alternating, best of `--rounds`: the estimator Functions of
tests/functions/estimators.py (a failure judged over 256 forward seeds), pyro's OMT sampler
where pyro imports, and the bundled specs (`specs/`, whose failures are deterministic: only
the seed test, two forward calls per failing case, runs there).

    .venv/bin/python bench/random_forward.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from unittest import mock

from gradverify.engine.random_forward import RandomForward
from gradverify.results import Result
from gradverify.run import session
from gradverify.spec.discover import spec_files
from gradverify.spec.load import SpecEntry, load_spec_file, parse_spec

ROOT = Path(__file__).resolve().parents[1]
ESTIMATORS = "tests.functions.estimators"
TARGETS = {
    "UnbiasedScale [6]": (f"{ESTIMATORS}:UnbiasedScale", "[{shape: [6]}]"),
    "BiasedScale [6]": (f"{ESTIMATORS}:BiasedScale", "[{shape: [6]}]"),
    "TransportSampler [5], []": (f"{ESTIMATORS}:TransportSampler", "[{shape: [5]}, {shape: []}]"),
    "pyro _OMTMVNSample [3], [3, 3]": (
        "pyro.distributions.omt_mvn:_OMTMVNSample",
        "[{shape: [3]}, {shape: [3, 3], structure: lower}, {value: [3]}]",
    ),
}


def entries_for(target: str, inputs: str) -> list[SpecEntry]:
    text = f"target: {target}\ncases:\n  - name: sample\n    inputs: {inputs}\n"
    return parse_spec(text, str(ROOT / "bench" / "random_forward.yaml"))


def timed(entries: Sequence[SpecEntry], judged: bool) -> float:
    options = session.RunOptions(isolation=False, cache=False)

    def unjudged(self: RandomForward, results: Sequence[Result]) -> list[Result]:
        return list(results)

    started = time.perf_counter()
    if judged:
        session.run(entries, options)
    else:
        with mock.patch.object(RandomForward, "judge", unjudged):
            session.run(entries, options)
    return time.perf_counter() - started


def compare(label: str, entries: Sequence[SpecEntry], rounds: int) -> None:
    timed(entries, True)  # warm: imports, first calls of torch's kernels
    off, on = [], []
    for _ in range(rounds):
        off.append(timed(entries, False))
        on.append(timed(entries, True))
    print(f"{label:34s} off {min(off):7.3f} s   on {min(on):7.3f} s   (best of {rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    for label, (target, inputs) in TARGETS.items():
        try:
            entries = entries_for(target, inputs)
            __import__(target.partition(":")[0])
        except ImportError:
            print(f"{label:34s} not installed")
            continue
        compare(label, entries, arguments.rounds)
    bundled = [entry for file in spec_files(str(ROOT / "specs")) for entry in load_spec_file(file)]
    compare("bundled specs (specs/)", bundled, arguments.rounds)


if __name__ == "__main__":
    main()
