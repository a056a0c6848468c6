"""What issue 23's inference rules cost (gradverify.inference.search.reach: both sides of a
comparison, paired and repeating indices, ranks 1-4, N != M, defaults as 0-d tensors).

Usage: python bench/reach.py [--repeat 7]

For each Function of bench/inference.py, in this process, inference with the rules
switched off and on, interleaved so that both see the same load: the cases, the probes
(trial runs of forward and backward) and the seconds, best of `--repeat`. Prints a
markdown table. Not a test: the seconds vary with the machine; the probe counts do not.
"""

from __future__ import annotations

import argparse
import runpy
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    from gradverify.inference import cases, from_signature
    from gradverify.inference.choice import fit_indices
    from gradverify.inference.rules import scalars, shapes
    from gradverify.inference.search import guesses as search
    from gradverify.inference.search import probe, reach
    from gradverify.target.loading import load_target

    probes = [0]

    def counted(*arguments: Any, **keywords: Any) -> Any:
        probes[0] += 1
        return probe.probe(*arguments, **keywords)

    for module in (cases, search, scalars):
        module.probe = counted  # type: ignore[attr-defined]

    def switch(on: bool) -> None:
        fit: Callable[..., Any] = reach.fitted if on else (lambda _, choices: fit_indices(choices))
        from_signature.fitted = cases.fitted = fit  # type: ignore[attr-defined]
        cases.reaching = reach.reaching if on else (lambda _, __: iter(()))  # type: ignore[attr-defined]
        from_signature.each_rank = shapes.each_rank if on else (lambda _, __: iter(()))  # type: ignore[attr-defined]

    targets = runpy.run_path(str(ROOT / "bench" / "inference.py"), run_name="bench")["TARGETS"]
    print(
        "| Function | cases before / after | probes before / after | inference before / after (s) |"
    )
    print("|---|---|---|---|")
    for spec in targets:
        target = load_target(spec)
        seen: dict[bool, tuple[object, int]] = {}
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
                count = len(inference.cases) if inference.stopped is None else "exit 2"
                seen[on] = (count, probes[0])
        name = spec.rsplit(":", 1)[-1]
        print(
            f"| {name} | {seen[False][0]} / {seen[True][0]} | {seen[False][1]} / {seen[True][1]} "
            f"| {min(seconds[False]):.4f} / {min(seconds[True]):.4f} |"
        )


if __name__ == "__main__":
    main()
