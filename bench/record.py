"""What `gradverify record` costs: a command run plain and under `gradverify record`, side by
side, as a ratio.

Usage: python bench/record.py [--steps 300] [--repeat 3] [--suite] [-- COMMAND...]

Without a command, the command is a training-like script over the bundled examples: STEPS
steps, each calling seven bundled Functions and custom ops forward and backward (on inputs of
one shape, and every tenth step on another, so that there are a few signatures to record).
The whole command is timed (Python and torch start-up, the record's spec writing with its
shrinking included), best of REPEAT (plain and recorded runs taken in turns), in a fresh
temporary directory each time so that every recorded run writes its specs anew; the
script's own loop time is printed by the script,
which shows the per-call cost of the hooks apart from start-up. Not a test: numbers vary
with the machine; the ratio is what matters (the goal: at most 1.5).

With --suite, the command is `python -m pytest -q` on a generated test suite of SUITE_TESTS
tests over bundled and test Functions, as a package's own tests call them: gradcheck on
small inputs, forward and backward on large ones (shapes to shrink), a float literal looped
over (40 values of a clip level), constant filters as buffers, dims and sizes. Its line
also says how many specs and cases the record wrote.
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


SUITE = """\
import pytest
import torch
from torch.autograd import gradcheck

from gradverify.examples.activations import ClippedReLU
from gradverify.examples.custom_ops import mysin, scaled_pow
from gradverify.examples.linear import Linear
from gradverify.examples.logsumexp import LogSumExp
from gradverify.examples.swish import Swish
from tests.functions.recorded import LpNormalize, SymmetricSmooth

KERNELS = {
    "box": [1 / 3, 1 / 3, 1 / 3],
    "binomial": [0.25, 0.5, 0.25],
    "wide": [0.0625, 0.25, 0.375, 0.25, 0.0625],
}
SIZES = [(4, 16), (8, 32), (2, 3, 64), (16, 256)]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", KERNELS)
def test_smooth_backward(size, name):
    x = torch.randn(*size, requires_grad=True)
    SymmetricSmooth.apply(x, torch.tensor(KERNELS[name])).sum().backward()
    assert x.grad.shape == x.shape


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", KERNELS)
def test_smooth_forward(size, name):
    x, kernel = torch.randn(*size), torch.tensor(KERNELS[name])
    expected = torch.nn.functional.conv1d(
        x.reshape(-1, 1, size[-1]), kernel.view(1, 1, -1), padding=len(kernel) // 2
    )
    assert torch.allclose(SymmetricSmooth.apply(x, kernel), expected.reshape(size), atol=1e-5)


@pytest.mark.parametrize("clip", [0.1 * k for k in range(1, 41)])
def test_clip(clip):
    x = torch.randn(64, requires_grad=True)
    ClippedReLU.apply(x, clip).sum().backward()
    assert x.grad.max() <= 1


@pytest.mark.parametrize("size", [(3, 4), (2, 5), (4, 4), (6,)])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("p", [1.5, 2.0, 3.0])
def test_normalize_gradcheck(p, dim, size):
    x = torch.randn(*size, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x: LpNormalize.apply(x, p, dim), (x,))


@pytest.mark.parametrize("rows", [128, 256, 512])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_large(rows, bias):
    x = torch.randn(rows, 128, requires_grad=True)
    weight = torch.randn(64, 128, requires_grad=True)
    b = torch.randn(64, requires_grad=True) if bias else None
    Linear.apply(x, weight, b).sum().backward()


@pytest.mark.parametrize("size", [(8,), (4, 8), (2, 4, 8), (3, 3)])
@pytest.mark.parametrize("dim", [0, -1])
def test_logsumexp(size, dim):
    x = torch.randn(*size, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x: LogSumExp.apply(x, dim), (x,))


@pytest.mark.parametrize("beta", [0.25 * k for k in range(1, 21)])
def test_swish(beta):
    x = torch.randn(32, requires_grad=True)
    Swish.apply(x, torch.tensor(beta, requires_grad=True)).sum().backward()


@pytest.mark.parametrize("n", [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048])
def test_mysin(n):
    x = torch.randn(n, requires_grad=True)
    mysin(x).sum().backward()


@pytest.mark.parametrize("scale", [0.5, 1.5, 2.5, 3.5])
@pytest.mark.parametrize("power", [1, 2, 3, 4, 5])
def test_scaled_pow(scale, power):
    x = torch.rand(16, requires_grad=True) + 0.5
    scaled_pow(x, scale, power).sum().backward()
"""
SUITE_TESTS = 12 + 12 + 40 + 24 + 6 + 8 + 20 + 10 + 20  # 152, as pytest collects them


def timed(command: list[str], directory: Path) -> tuple[float, str]:
    """Wall seconds of `command` run in `directory`, and the loop time the script printed."""
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=directory, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if completed.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{completed.stdout}{completed.stderr}")
    loop = next((line for line in completed.stderr.splitlines() if line.startswith("loop ")), "")
    if not loop and (directory / "specs").is_dir():  # a suite: what the record wrote
        files = list((directory / "specs").glob("*.yaml"))
        cases = sum(file.read_text().count("\n  - name: ") for file in files)
        loop = f"{len(files)} specs, {cases} cases"
    return seconds, loop.removeprefix("loop ")


def once(command: list[str], recorded: bool) -> tuple[float, str]:
    directory = Path(tempfile.mkdtemp(prefix="gradverify-bench-record-"))
    try:
        (directory / "script.py").write_text(SCRIPT)
        (directory / "test_suite.py").write_text(SUITE)
        full = [str(GRADVERIFY), "record", "--", *command] if recorded else command
        return timed(full, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def best(command: list[str], repeat: int) -> tuple[tuple[float, str], tuple[float, str]]:
    """The best plain and the best recorded run, taken in turns (a machine whose load
    changes weighs on both alike)."""
    plain, recorded = [], []
    for _ in range(repeat):
        plain.append(once(command, recorded=False))
        recorded.append(once(command, recorded=True))
    return min(plain), min(recorded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--suite", action="store_true", help="record a generated test suite")
    parser.add_argument("command", nargs="*", help="a command of your own (after --)")
    arguments = parser.parse_args()
    command = arguments.command or [sys.executable, "script.py", str(arguments.steps)]
    if arguments.suite:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_suite.py"]
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    (plain, plain_loop), (recorded, recorded_loop) = best(command, arguments.repeat)
    print(f"{'':28}{'plain':>10}{'recorded':>10}{'ratio':>8}")
    print(f"{'whole command (s)':28}{plain:>10.2f}{recorded:>10.2f}{recorded / plain:>8.2f}")
    if arguments.suite:
        added = recorded - plain
        print(f"{SUITE_TESTS} tests; the record added {added:.1f} s and wrote {recorded_loop}")
    elif plain_loop and recorded_loop:
        loop_ratio = float(recorded_loop[:-1]) / float(plain_loop[:-1])
        print(f"{'its own loop (s)':28}{plain_loop:>10}{recorded_loop:>10}{loop_ratio:>8.2f}")


if __name__ == "__main__":
    main()
