"""10⁷ elements, with kinks and smooth: the whole check as multiples of one forward+backward, and its memory.

Each row runs `gradverify check` on one case of 10⁷ float64 elements in a subprocess (the
default isolated run, no cache) and reports its wall time over the best of three
forward+backward passes of the same Function, and the peak resident memory of the run's
processes (ru_maxrss of the children) over the size of the case's input.

    .venv/bin/python bench/large.py
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
SIZE = 10_000_000
KINKS = "tests.functions.kinks_at_scale"
SMOOTH = "tests.functions.smooth_at_scale"
FUNCTIONS = (
    ("ReLU (kink at 0)", KINKS, "MyReLU"),
    ("clamp (kinks at ±0.5)", KINKS, "Clamp"),
    ("LeakyReLU", KINKS, "LeakyReLU"),
    ("hardtanh (kinks at ±1)", KINKS, "Hardtanh"),
    ("softplus (smooth)", KINKS, "Softplus"),
    ("clamp, one wrong element", KINKS, "ClampWrongAtOneElement"),
    ("GELU, tanh approximation", SMOOTH, "Gelu"),
    ("GELU, tanh approximation, setup_context", SMOOTH, "GeluSetupContext"),
    ("softplus", SMOOTH, "Softplus"),
    ("softplus, setup_context", SMOOTH, "SoftplusSetupContext"),
    ("sigmoid", SMOOTH, "Sigmoid"),
    ("sigmoid, setup_context", SMOOTH, "SigmoidSetupContext"),
)

MEASURE = """\
import resource, subprocess, sys, time
started = time.perf_counter()
completed = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(wall, peak, completed.returncode)
print(completed.stdout)
"""


def forward_backward(module: str, name: str, repeat: int = 3) -> float:
    """The best time of one forward and one backward of the Function on 10⁷ elements."""
    sys.path.insert(0, str(ROOT))
    function = getattr(importlib.import_module(module), name)
    x = (torch.rand(SIZE, dtype=torch.float64) * 2 - 1).requires_grad_()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        y = function.apply(x)
        y.backward(torch.ones_like(y))
        best = min(best, time.perf_counter() - started)
        x.grad = None
    return best


def check(module: str, name: str, directory: Path) -> tuple[float, int, list[str]]:
    """(wall seconds, peak bytes, one word per result) of `gradverify check` on one case."""
    spec = directory / f"{name}.yaml"
    spec.write_text(
        f"target: {module}:{name}\ncases: [{{name: big, inputs: [{{shape: [{SIZE}]}}]}}]\n",
        encoding="utf-8",
    )
    command = [sys.executable, "-m", "gradverify", "check", str(spec), "--format", "json"]
    measured = subprocess.run(
        [sys.executable, "-c", MEASURE, *command, "--no-cache", "-j", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    first, _, rest = measured.stdout.partition("\n")
    wall, peak, _ = first.split()
    results = json.loads(rest)["results"]
    verdicts = [f"{r['check']}:{r['status']}" for r in results if r["status"] != "skip"]
    return float(wall), int(peak), verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--only", nargs="*", help="Functions of tests/functions/{kinks,smooth}_at_scale.py"
    )
    options = parser.parse_args()
    rows = [row for row in FUNCTIONS if options.only is None or row[2] in options.only]
    input_bytes = SIZE * 8
    print(
        "| Function (10⁷ float64) | forward+backward | whole run | × f+b | peak memory | × input |"
    )
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for label, module, name in rows:
            unit = forward_backward(module, name)
            wall, peak, verdicts = check(module, name, Path(directory))
            failed = [v.split(":")[0] for v in verdicts if v.endswith(":fail")]
            outcome = f" (fails: {', '.join(failed)})" if failed else ""
            print(
                f"| {label}{outcome} | {unit:.2f} s | {wall:.1f} s | {wall / unit:.0f}× "
                f"| {peak / 2**30:.2f} GB | {peak / input_bytes:.0f}× |"
            )


if __name__ == "__main__":
    main()
