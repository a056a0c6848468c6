"""10⁷ elements, with kinks and smooth: the whole check as multiples of one forward+backward, and its memory.

Each row runs `gradverify check` on one case of 10⁷ float64 elements in a subprocess (the
default isolated run, no cache) and reports its wall time over the best of three
forward+backward passes of the same Function, and the peak resident memory of the run's
processes (ru_maxrss of the children) over the size of the case's input.

    .venv/bin/python bench/large.py
    .venv/bin/python bench/large.py --only GeluSetupContext --shape 3000 3000 \
        --baseline ../gradverify-before --rounds 2

`--shape` runs another shape of about as many elements (the issue's `[3000, 3000]`);
`--baseline` runs another checkout (its own .venv) alternately with this one, `--rounds`
times each, so that both see the same load; each run's `gradgradcheck` seconds come from
its JSON report.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
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
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
peak = usage.ru_maxrss * 1024
print(wall, peak, completed.returncode, usage.ru_utime + usage.ru_stime)
print(completed.stdout)
"""


def forward_backward(module: str, name: str, shape: list[int], repeat: int = 3) -> float:
    """The best time of one forward and one backward of the Function on `shape`."""
    sys.path.insert(0, str(ROOT))
    function = getattr(importlib.import_module(module), name)
    x = (torch.rand(shape, dtype=torch.float64) * 2 - 1).requires_grad_()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        y = function.apply(x)
        y.backward(torch.ones_like(y))
        best = min(best, time.perf_counter() - started)
        x.grad = None
    return best


@dataclass(frozen=True)
class Run:
    """One `gradverify check` run: wall seconds, peak bytes, verdicts and check seconds."""

    wall: float
    cpu: float  # user + system seconds of the run's processes
    peak: int
    verdicts: list[str]
    seconds: dict[str, float]


def check(module: str, name: str, directory: Path, shape: list[int], root: Path = ROOT) -> Run:
    """`gradverify check` on one case, run by the checkout at `root` with its own venv."""
    spec = directory / f"{name}.yaml"
    spec.write_text(
        f"target: {module}:{name}\ncases: [{{name: big, inputs: [{{shape: {shape}}}]}}]\n",
        encoding="utf-8",
    )
    python = sys.executable if root == ROOT else str(root / ".venv" / "bin" / "python")
    command = [python, "-m", "gradverify", "check", str(spec), "--format", "json"]
    measured = subprocess.run(
        [sys.executable, "-c", MEASURE, *command, "--no-cache", "-j", "1"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    first, _, rest = measured.stdout.partition("\n")
    wall, peak, _, cpu = first.split()
    results = json.loads(rest)["results"]
    verdicts = [f"{r['check']}:{r['status']}" for r in results if r["status"] != "skip"]
    seconds = {r["check"]: r.get("seconds", 0.0) for r in results}
    return Run(float(wall), float(cpu), int(peak), verdicts, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--only", nargs="*", help="Functions of tests/functions/{kinks,smooth}_at_scale.py"
    )
    parser.add_argument("--shape", nargs="+", type=int, default=[SIZE], help="the input's shape")
    parser.add_argument("--baseline", type=Path, help="another checkout to run alternately")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each checkout")
    options = parser.parse_args()
    rows = [row for row in FUNCTIONS if options.only is None or row[2] in options.only]
    shape: list[int] = options.shape
    input_bytes = math.prod(shape) * 8
    roots = [ROOT] if options.baseline is None else [options.baseline.resolve(), ROOT]
    print(f"shape {shape}")
    print(
        "| Function (float64) | checkout | forward+backward | whole run | × f+b | CPU "
        "| gradgradcheck | peak memory | × input |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for label, module, name in rows:
            for _ in range(options.rounds):
                unit = forward_backward(module, name, shape)  # each round: the load changes
                for root in roots:
                    run = check(module, name, Path(directory), shape, root)
                    failed = [v.split(":")[0] for v in run.verdicts if v.endswith(":fail")]
                    outcome = f" (fails: {', '.join(failed)})" if failed else ""
                    gradgradcheck = run.seconds.get("gradgradcheck", 0.0)
                    print(
                        f"| {label}{outcome} | {_name(root)} | {unit:.2f} s | {run.wall:.1f} s "
                        f"| {run.wall / unit:.0f}× | {run.cpu:.1f} s | {gradgradcheck:.1f} s "
                        f"| {run.peak / 2**30:.2f} GB | {run.peak / input_bytes:.0f}× |",
                        flush=True,
                    )


def _name(root: Path) -> str:
    return "this" if root == ROOT else root.name


if __name__ == "__main__":
    main()
