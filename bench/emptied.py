"""What watching for slices that come out empty costs inference (gradverify.inference.search.emptied).

Usage: python bench/emptied.py [--repeat 7]

For each Function of bench/inference.py and of tests/functions/emptied.py, in this process,
inference with the watch off (no probe ever reports an empty slice: inference as before)
and on, interleaved so that both see the same load: the base case's shapes, the probes
(trial runs of forward and backward) and the seconds, best of `--repeat`. Prints a markdown
table. Not a test: the seconds vary with the machine; the probe counts do not.
"""

from __future__ import annotations

import argparse
import contextlib
import runpy
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EMPTIED = [
    "tests.functions.emptied:HeadScaledByTail",
    "tests.functions.emptied:SplitProduct",
    "tests.functions.emptied:FirstScalesRest",
    "tests.functions.emptied:BeyondEveryGuess",
    "tests.functions.emptied:HeadScaledByTailPeak",
]


@contextlib.contextmanager
def unwatched() -> Iterator[Callable[[], str | None]]:
    yield lambda: None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    from gradverify.inference import cases, from_signature
    from gradverify.inference.rules import scalars
    from gradverify.inference.search import guesses as search
    from gradverify.inference.search import probe
    from gradverify.target.loading import load_target

    probes = [0]
    watching = probe.watching

    def counted(*arguments: Any, **keywords: Any) -> Any:
        probes[0] += 1
        return probe.probe(*arguments, **keywords)

    for module in (cases, search, scalars, from_signature):
        module.probe = counted  # type: ignore[attr-defined]

    def switch(on: bool) -> None:
        probe.watching = watching if on else unwatched

    targets = runpy.run_path(str(ROOT / "bench" / "inference.py"), run_name="bench")["TARGETS"]
    print("| Function | base case off / on | probes off / on | inference off / on (s) |")
    print("|---|---|---|---|")
    for spec in [*targets, *EMPTIED]:
        target = load_target(spec)
        seen: dict[bool, tuple[str, int]] = {}
        seconds: dict[bool, list[float]] = {False: [], True: []}
        for on in (False, True):  # warm: the first calls of each torch op
            switch(on)
            from_signature.infer(target)
        for _ in range(options.repeat):
            for on in (False, True):
                switch(on)
                probes[0] = 0
                started = time.perf_counter()
                inference = from_signature.infer(target)
                seconds[on].append(time.perf_counter() - started)
                shapes = ", ".join(str(list(c.shape)) for c in inference.choices if c.shape)
                shapes = "exit 2" if inference.stopped is not None else shapes
                seen[on] = (shapes or "-", probes[0])
        name = spec.rsplit(":", 1)[-1]
        print(
            f"| {name} | {seen[False][0]} / {seen[True][0]} | {seen[False][1]} / {seen[True][1]} "
            f"| {min(seconds[False]):.4f} / {min(seconds[True]):.4f} |"
        )


if __name__ == "__main__":
    main()
