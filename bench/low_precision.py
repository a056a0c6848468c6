"""How far from the line the float32 verdict of `finite_difference` falls, and what it costs.

For the kernel-style Functions of tests/functions/kernels.py (float32-only, or computing in
float32), correct and buggy, at a few sizes: the largest discrepancy over its allowance
(10 × the measured error bound, or the spec's rtol of the projection's size) for each
argument, the verdict, and the check's time against one forward+backward of the Function.
A correct kernel should sit far under 1, a buggy one far over.

Run from the repository root: `.venv/bin/python bench/low_precision.py`.
"""

from __future__ import annotations

import re
import sys
import textwrap
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradverify.run import session  # noqa: E402
from gradverify.spec.load import parse_spec  # noqa: E402

CASES = [
    ("SiLUMulFloat32", "[3, 4]", 2),
    ("SiLUMulFloat32DroppedTerm", "[3, 4]", 2),
    ("GeluInFloat32", "[8]", 1),
    ("GeluInFloat32DroppedTerm", "[8]", 1),
    ("TanhFloat32", "[64, 64]", 1),
    ("TanhFloat32WrongBranch", "[64, 64]", 1),
    ("TanhFloat32", "[1000, 1000]", 1),
    ("TanhFloat32WrongBranch", "[1000, 1000]", 1),
]


def spec(target: str, shape: str, arguments: int) -> str:
    inputs = ", ".join([f"{{shape: {shape}, dtype: float32}}"] * arguments)
    return textwrap.dedent(f"""
        target: tests.functions.kernels:{target}
        checks: [finite_difference]
        cases: [{{name: bench, inputs: [{inputs}]}}]
        """)


def one_pass(target: str, shape: list[int], arguments: int) -> float:
    """Seconds of one forward+backward of the Function, best of 5."""
    import tests.functions.kernels as kernels

    function = getattr(kernels, target)
    inputs = [torch.rand(shape, requires_grad=True) for _ in range(arguments)]
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        function.apply(*inputs).sum().backward()
        best = min(best, time.perf_counter() - start)
    return best


def margin(message: str, notes: tuple[str, ...]) -> str:
    """discrepancy / allowed, read off a pass's message or a failure's note."""
    found = re.search(r"discrepancy ([\d.e+-]+), allowed ([\d.e+-]+)", message)
    if found:
        return f"{float(found[1]) / float(found[2]):.3g}"
    for note in notes:
        failed = re.search(r"differs by [\d.e+-]+, ([\d.e+-]+) ×", note)
        if failed:
            return failed[1]
    return "?"


def main() -> None:
    torch.set_num_threads(1)  # a shared machine: one thread measures the work, not the waits
    print(
        "| Function | shape | verdict per argument | discrepancy / allowed | time (s) | × one fwd+bwd |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for target, shape, arguments in CASES:
        text = spec(target, shape, arguments)
        entries = parse_spec(text, "bench.yaml")
        start = time.perf_counter()
        report = session.run(entries, session.RunOptions(isolation=False, cache=False))
        took = time.perf_counter() - start
        results = [r for r in report.results if r.check == "finite_difference"]
        verdicts = ", ".join(f"{r.input_name}: {r.status.value}" for r in results)
        margins = ", ".join(margin(r.message, r.notes) for r in results)
        dims = [int(n) for n in shape.strip("[]").split(",")]
        unit = one_pass(target, dims, arguments)
        print(f"| {target} | {shape} | {verdicts} | {margins} | {took:.3f} | {took / unit:.0f} |")


if __name__ == "__main__":
    main()
