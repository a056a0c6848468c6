"""Where a pre-commit user waits, side by side in one run: a commit that touches no Function,
and one that changes one Function in a file of twelve.

Usage: python bench/precommit.py [--repeat N]

Prints a Markdown table: best wall time of N runs of each command, and its ratio to the
baseline of its row. Not a test: the ratios are what matter.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent
GRADVERIFY = str(BIN / "gradverify")
# The CLI as it answered before the fast path (gradverify.quick): typer, rich and pydantic.
FULL_CLI = [sys.executable, "-c", "import sys; from gradverify.cli import main; main()"]

FUNCTION = """
class Scale{index}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return scaled(x, {index})

    @staticmethod
    def backward(ctx, grad_output):
        return scaled(grad_output, {index})
"""
SPEC = """\
  - target: ops.many:Scale{index}
    cases:
      - {{name: vector, inputs: [{{shape: [300]}}]}}
      - {{name: matrix, inputs: [{{shape: [15, 20]}}]}}
"""


def best(
    command: list[str], cwd: Path, repeat: int, before: Callable[[int], None] | None = None
) -> float:
    """Best wall time of `command`; `before(run)`, a step run (untimed) before each."""
    times = []
    for run in range(repeat):
        if before is not None:
            before(run)
        started = time.perf_counter()
        subprocess.run(command, cwd=cwd, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return min(times)


def untouched_rows(project: Path, repeat: int) -> list[tuple[str, float, float]]:
    nothing = best([sys.executable, "-c", "pass"], project, repeat)
    torch = best([sys.executable, "-c", "import torch"], project, repeat)
    readme = ["check", "--changed-files", "README.md"]
    rows = []
    for name, arguments in (("--version", ["--version"]), (" ".join(readme), readme)):
        fast = best([GRADVERIFY, *arguments], project, repeat)
        full = best([*FULL_CLI, *arguments], project, repeat)
        rows += [
            (f"`gradverify {name}` vs `python -c pass`", nothing, fast),
            (f'`gradverify {name}` vs `python -c "import torch"`', torch, fast),
            (f"`gradverify {name}` vs the full CLI (typer, rich, pydantic)", full, fast),
        ]
    return rows


def one_function_rows(project: Path, repeat: int) -> list[tuple[str, float, float]]:
    package = project / "ops"
    package.mkdir()
    (package / "__init__.py").write_text("")
    functions = "".join(FUNCTION.format(index=index) for index in range(1, 13))
    helper = "def scaled(x, factor):\n    return x * factor\n"
    (package / "many.py").write_text(f"import torch\n\n\n{helper}\n{functions}")
    specs = "".join(SPEC.format(index=index) for index in range(1, 13))
    (project / "specs").mkdir()
    (project / "specs" / "many.yaml").write_text(f"functions:\n{specs}")
    changed = [GRADVERIFY, "check", "--changed-files", "ops/many.py"]
    subprocess.run(changed, cwd=project, capture_output=True, check=True)  # fills the cache
    source = (package / "many.py").read_text()

    def edit(run: int) -> None:  # Scale7's backward, new text each run; nothing else
        old = "return scaled(grad_output, 7)"
        (package / "many.py").write_text(source.replace(old, f"{old}  # edit {run}"))

    one = best(changed, project, repeat, before=edit)
    every = best([*changed, "--no-cache"], project, repeat)
    unchanged = best(changed, project, repeat)  # all 24 from the cache: the floor
    return [
        ("pre-commit, one Function of 12 changed (2 of 24 cases run) vs all 24 run", every, one),
        ("same, one Function changed vs none (24 cases from the cache)", unchanged, one),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch)
        (project / "README.md").write_text("# a project\n")
        rows = untouched_rows(project, arguments.repeat)
        rows += one_function_rows(project, max(3, arguments.repeat // 2))
    print("| where a pre-commit user waits | baseline (s) | gradverify (s) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for name, baseline, ours in rows:
        print(f"| {name} | {baseline:.3f} | {ours:.3f} | {ours / baseline:.2f}× |")


if __name__ == "__main__":
    main()
