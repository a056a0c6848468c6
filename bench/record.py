"""What `gradverify record` costs: a command run plain and under `gradverify record`, side by
side, as a ratio.

Usage: python bench/record.py [--steps 300] [--repeat 3] [-- COMMAND...]

Without a command, the command is a training-like script over the bundled examples: STEPS
steps, each calling seven bundled Functions and custom ops forward and backward (on inputs of
one shape, and every tenth step on another, so that there are a few signatures to record).
The whole command is timed (Python and torch start-up, the record's spec writing with its
shrinking included), best of REPEAT, in a fresh temporary directory each time so that every
recorded run writes its specs anew; the script's own loop time is printed by the script,
which shows the per-call cost of the hooks apart from start-up. Not a test: numbers vary
with the machine; the ratio is what matters (the goal: at most 1.5).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRADVERIFY = Path(sys.executable).parent / "gradverify"

SCRIPT = """\
import sys, time
import torch
from gradverify.examples.activations import ClippedReLU, ReLU
from gradverify.examples.custom_ops import mysin, scaled_pow
from gradverify.examples.linear import Linear
from gradverify.examples.logsumexp import LogSumExp
from gradverify.examples.swish import Swish

steps = int(sys.argv[1])
weight = torch.randn(64, 128, requires_grad=True)
beta = torch.tensor(1.0, requires_grad=True)
start = time.perf_counter()
for step in range(steps):
    batch = 32 if step % 10 else 16
    x = torch.randn(batch, 128, requires_grad=True)
    h = Linear.apply(x, weight, None)
    h = ClippedReLU.apply(h, 6.0) + ReLU.apply(h) + Swish.apply(h, beta)
    h = mysin(h) + scaled_pow(h, 0.5, 2)
    LogSumExp.apply(h, 1).sum().backward()
print(f"loop {time.perf_counter() - start:.3f}s", file=sys.stderr)
"""


def timed(command: list[str], directory: Path) -> tuple[float, str]:
    """Wall seconds of `command` run in `directory`, and the loop time the script printed."""
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=directory, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if completed.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{completed.stdout}{completed.stderr}")
    loop = next((line for line in completed.stderr.splitlines() if line.startswith("loop ")), "")
    return seconds, loop.removeprefix("loop ")


def best(command: list[str], repeat: int, recorded: bool) -> tuple[float, str]:
    runs = []
    for _ in range(repeat):
        directory = Path(tempfile.mkdtemp(prefix="gradverify-bench-record-"))
        try:
            (directory / "script.py").write_text(SCRIPT)
            full = [str(GRADVERIFY), "record", "--", *command] if recorded else command
            runs.append(timed(full, directory))
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    return min(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("command", nargs="*", help="a command of your own (after --)")
    arguments = parser.parse_args()
    command = arguments.command or [sys.executable, "script.py", str(arguments.steps)]
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    plain, plain_loop = best(command, arguments.repeat, recorded=False)
    recorded, recorded_loop = best(command, arguments.repeat, recorded=True)
    print(f"{'':28}{'plain':>10}{'recorded':>10}{'ratio':>8}")
    print(f"{'whole command (s)':28}{plain:>10.2f}{recorded:>10.2f}{recorded / plain:>8.2f}")
    if plain_loop and recorded_loop:
        loop_ratio = float(recorded_loop[:-1]) / float(plain_loop[:-1])
        print(f"{'its own loop (s)':28}{plain_loop:>10}{recorded_loop:>10}{loop_ratio:>8.2f}")


if __name__ == "__main__":
    main()
