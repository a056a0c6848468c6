"""What inference that covers costs: probing for the base case alone vs with the extra cases.

Usage: python bench/inference.py [--repeat 3]

For each small Function (the rule stand-ins of tests/functions/inference.py and some bundled
examples), in this process with torch imported and each target loaded: the seconds of the
base inference (one case, as before issue 16) and of the whole (base + extra cases), side by
side, best of `--repeat`, with the number of cases. Prints a markdown table. Not a test:
numbers vary with the machine; the budget (gradverify.inference.cases.BUDGET) caps the extra.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGETS = [
    "tests.functions.inference:Softmax", "tests.functions.inference:ScaledLeakyReLU",
    "tests.functions.inference:AddBias", "tests.functions.inference:ConjMul",
    "tests.functions.inference:Embedding", "tests.functions.inference:NLLLoss",
    "tests.functions.inference:Log", "tests.functions.inference:ChannelScale",
    "gradverify.examples.swish:Swish", "tests.functions.correct:Mul",
    "tests.functions.inference:HardSigmoid", "tests.functions.inference:LinearTanh",
    "tests.functions.inference:RMSNormForgotEps",
    # issue 23: both sides of a comparison, paired and repeating indices, ranks, N != M,
    # a default as a 0-d tensor
    "tests.functions.branches:BoxSDF", "tests.functions.indices:SegmentSum",
    "tests.functions.indices:Gather", "tests.functions.shapes:BilinearLookup",
    "tests.functions.shapes:MeanSquaredDistance", "tests.functions.branches:ExpScale",
]  # fmt: skip


def best(action: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    from dataclasses import replace

    from gradverify.inference import from_signature
    from gradverify.run import session
    from gradverify.run.session import RunOptions
    from gradverify.spec.load import SpecEntry
    from gradverify.target.loading import load_target

    run_options = RunOptions(isolation=False, cache=False)

    def checked(inference: object) -> None:
        entry = SpecEntry(spec=inference.spec(), file=None)  # type: ignore[attr-defined]
        session.run([entry], run_options)

    print(
        "| Function | cases | probing: base / all (s) | ratio | checks: base / all cases (s) | ratio |"
    )
    print("|---|---|---|---|---|---|")
    for spec in TARGETS:
        target = load_target(spec)
        from_signature.infer(target)  # warm: first calls of each torch op
        base = best(lambda target=target: from_signature._base(target), options.repeat)
        whole = best(lambda target=target: from_signature.infer(target), options.repeat)
        inference = from_signature.infer(target)
        one = replace(inference, extra=())
        checked(inference)  # warm: the checks' lazy imports and first kernels
        check_one = best(lambda one=one: checked(one), options.repeat)
        check_all = best(lambda inference=inference: checked(inference), options.repeat)
        name = spec.rsplit(":", 1)[-1]
        print(
            f"| {name} | {len(inference.cases)} | {base:.4f} / {whole:.4f} | {whole / base:.1f}× "
            f"| {check_one:.3f} / {check_all:.3f} | {check_all / check_one:.1f}× |"
        )


if __name__ == "__main__":
    main()
