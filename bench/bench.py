"""gradverify against plain torch.autograd.gradcheck/gradgradcheck, side by side in one run.

Usage: python bench/bench.py [--quick]

Prints a Markdown table of wall times and ratios on this machine. Times are the best of a
few repetitions (except the slow plain-gradcheck rows, run once). Not a test: numbers vary
with the machine; the ratios are what matter.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradverify.run import session  # noqa: E402
from gradverify.spec.load import load_spec_file, parse_spec  # noqa: E402

FIVE = "[forward, backward, finite_difference, gradcheck, gradgradcheck]"


def best_of(action: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def run_spec_text(text: str, **options: Any) -> Any:
    entries = parse_spec(textwrap.dedent(text), "bench.yaml")
    return session.run(entries, session.RunOptions(cache=False, **options))


def plain_checks(call: Callable[..., Any], arguments: tuple[Any, ...], second: bool = True) -> None:
    # raise_exception=False: plain gradcheck fails ClippedReLU at its kinks (gradverify warns).
    torch.autograd.gradcheck(call, arguments, raise_exception=False)
    if second:
        torch.autograd.gradgradcheck(call, arguments, raise_exception=False)


def small_suite(repeat: int) -> list[tuple[str, float, float]]:
    """specs/examples.yaml with the five checks, against gradcheck + gradgradcheck per case."""
    from gradverify.inputs import build_inputs
    from gradverify.target.loading import load_target

    entries = load_spec_file(ROOT / "specs" / "examples.yaml")
    five = [
        type(e)(
            e.spec.model_copy(update={"checks": FIVE.strip("[]").split(", ")}),
            e.file,
            e.line,
            e.case_lines,
        )
        for e in entries
    ]
    cases = []
    for entry in five:
        target = load_target(entry.spec.target)
        for case in entry.spec.cases:
            cases.append((target.call, build_inputs(case, entry.spec.seed)))

    def plain() -> None:
        for call, arguments in cases:
            plain_checks(
                lambda *a, call=call: tuple(
                    o for o in _tuple(call(*a)) if isinstance(o, torch.Tensor)
                ),
                arguments,
            )

    plain_time = best_of(plain, repeat)
    in_process = best_of(
        lambda: session.run(five, session.RunOptions(cache=False, isolation=False)), repeat
    )
    isolated = best_of(lambda: session.run(five, session.RunOptions(cache=False)), repeat)
    return [
        ("small suite, five checks, in-process (--no-isolation)", plain_time, in_process),
        ("small suite, five checks, isolated workers (default)", plain_time, isolated),
    ]


def _tuple(value: Any) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else (value,)


def linear_64(repeat: int) -> tuple[str, float, float]:
    from gradverify.examples.linear import Linear

    generator = torch.Generator().manual_seed(0)
    x = torch.rand(64, 64, dtype=torch.float64, generator=generator).requires_grad_()
    w = torch.rand(64, 64, dtype=torch.float64, generator=generator).requires_grad_()
    plain_time = best_of(lambda: plain_checks(Linear.apply, (x, w)), 1)
    spec = f"""
    target: gradverify.examples.linear:Linear
    checks: {FIVE}
    cases: [{{name: l64, inputs: [{{shape: [64, 64]}}, {{shape: [64, 64]}}]}}]
    """
    ours = best_of(lambda: run_spec_text(spec, isolation=False), repeat)
    return "64×64 Linear (auto → randomized)", plain_time, ours


def elementwise(n: int, repeat: int, with_plain: bool) -> tuple[str, float | None, float]:
    side = round(n**0.5)
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(side, side, dtype=torch.float64, generator=generator).requires_grad_()
    plain_time = (
        best_of(lambda: plain_checks(torch.sigmoid, (x,), second=False), 1) if with_plain else None
    )
    spec = f"""
    target: tests.functions.large:Sigmoid
    checks: [forward, backward, finite_difference, gradcheck]
    cases: [{{name: big, inputs: [{{shape: [{side}, {side}]}}]}}]
    """
    ours = best_of(lambda: run_spec_text(spec, isolation=False), repeat)
    return f"{side * side:.0e}-element sigmoid (gradcheck only)", plain_time, ours


def localization(repeat: int) -> tuple[str, float, float]:
    """A wrong element in 10^6 elements, in units of one forward+backward of the Function."""
    from tests.functions import large

    x = torch.rand(1000, 1000, dtype=torch.float64).requires_grad_()

    def forward_backward() -> None:
        y = large.SigmoidWrongAtOneElement.apply(x)
        torch.autograd.grad(y, x, torch.ones_like(y))

    unit = best_of(forward_backward, 5)
    spec = """
    target: tests.functions.large:SigmoidWrongAtOneElement
    checks: [finite_difference]
    cases: [{name: big, inputs: [{shape: [1000, 1000]}]}]
    """
    ours = best_of(lambda: run_spec_text(spec, isolation=False), repeat)
    return "10⁶ elements, one wrong: localized (time / one forward+backward)", unit, ours


PLAIN_SCRIPT = """\
import importlib, sys
import torch

def tensors(call):
    def run(*arguments):
        outputs = call(*arguments)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        return tuple(o for o in outputs if isinstance(o, torch.Tensor))
    return run

for target, arguments in torch.load(sys.argv[1]):
    module, attr = target.split(":")
    call = tensors(getattr(importlib.import_module(module), attr).apply)
    torch.autograd.gradcheck(call, arguments, raise_exception=False)
    torch.autograd.gradgradcheck(call, arguments, raise_exception=False)
"""


def timed_process(command: list[str], cwd: Path, repeat: int) -> tuple[float, float]:
    """Best wall and best CPU (user + system, the process and all it waited for) of a command."""
    import resource

    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, cwd=cwd, capture_output=True, check=False)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def whole_process(repeat: int) -> list[tuple[str, float, float]]:
    """Whole commands, start-up included: the five-check suite and one zero-config check."""
    import yaml

    from gradverify.inference.zeroconfig import infer_entry
    from gradverify.inputs import build_inputs

    gradverify = shutil.which("gradverify") or str(Path(sys.executable).parent / "gradverify")
    document = yaml.safe_load((ROOT / "specs" / "examples.yaml").read_text())
    for function in document["functions"]:
        function["checks"] = FIVE.strip("[]").split(", ")
    entries = parse_spec(yaml.safe_dump(document), "suite.yaml")
    cases = [
        (entry.spec.target, build_inputs(case, entry.spec.seed))
        for entry in entries
        for case in entry.spec.cases
    ]
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch)
        (project / "suite.yaml").write_text(yaml.safe_dump(document))
        (project / "plain.py").write_text(PLAIN_SCRIPT)
        torch.save(cases, project / "cases.pt")
        plain = timed_process([sys.executable, "plain.py", "cases.pt"], project, repeat)
        check = [gradverify, "check", "suite.yaml", "--no-cache"]
        isolated = timed_process(check, project, repeat)
        in_process = timed_process([*check, "--no-isolation"], project, repeat)
        for kind, index in (("wall", 0), ("CPU", 1)):
            rows.append(
                (f"suite, whole process, isolated (default) vs plain script: {kind}",
                 plain[index], isolated[index])
            )  # fmt: skip
        for kind, index in (("wall", 0), ("CPU", 1)):
            rows.append(
                (f"suite, whole process, --no-isolation vs plain script: {kind}",
                 plain[index], in_process[index])
            )  # fmt: skip
        target = "gradverify.examples.swish:Swish"
        from gradverify.target.loading import load_target

        entry, _ = infer_entry(load_target(target))
        own = best_of(
            lambda: session.run([entry], session.RunOptions(cache=False, isolation=False)), 3
        )
        import_torch = timed_process([sys.executable, "-c", "import torch"], project, repeat)
        zero = timed_process([gradverify, "check", target, "--no-cache"], project, repeat)
        inferred = [(target, build_inputs(case, entry.spec.seed)) for case in entry.spec.cases]
        torch.save(inferred, project / "inferred.pt")
        cold = timed_process([sys.executable, "plain.py", "inferred.pt"], project, repeat)
        for kind, index in (("wall", 0), ("CPU", 1)):
            rows.append(
                (f"zero-config `{target}` vs `import torch` + its checks warm ({own:.3f} s): {kind}",
                 import_torch[index] + own, zero[index])
            )  # fmt: skip
        for kind, index in (("wall", 0), ("CPU", 1)):
            rows.append(
                (f"zero-config `{target}` vs plain script, same inputs: {kind}",
                 cold[index], zero[index])
            )  # fmt: skip
    return rows


def plugin_vs_cli(repeat: int) -> list[tuple[str, float, float]]:
    """`pytest --gradverify` against `gradverify check` on the same specs: the bundled ones."""
    gradverify = shutil.which("gradverify") or str(Path(sys.executable).parent / "gradverify")
    names = ("examples", "surrogates", "complex", "reference", "transforms", "buggy")
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch)
        (project / "specs").mkdir()
        for name in names:
            shutil.copy(ROOT / "specs" / f"{name}.yaml", project / "specs")
        (project / "pytest.ini").write_text("[pytest]\n")
        cli = timed_process([gradverify, "check", "specs", "--no-cache"], project, repeat)
        # Without the plugins of this development environment (hypothesis alone takes 1 s).
        plugin = timed_process(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "-p", "no:hypothesispytest", "--gradverify", "specs"],
            project, repeat,
        )  # fmt: skip
    return [
        ("`pytest --gradverify specs` vs `gradverify check specs`: wall", cli[0], plugin[0]),
        ("`pytest --gradverify specs` vs `gradverify check specs`: CPU", cli[1], plugin[1]),
    ]


def command_times() -> list[tuple[str, float, float]]:
    gradverify = shutil.which("gradverify") or str(Path(sys.executable).parent / "gradverify")

    def timed(command: list[str], cwd: Path = ROOT) -> float:
        started = time.perf_counter()
        subprocess.run(command, cwd=cwd, capture_output=True, check=False)
        return time.perf_counter() - started

    import_torch = min(timed([sys.executable, "-c", "import torch"]) for _ in range(3))
    help_time = min(timed([gradverify, "--help"]) for _ in range(3))
    rows = [('`gradverify --help` vs `python -c "import torch"`', import_torch, help_time)]
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch)
        shutil.copytree(ROOT / "gradverify" / "examples", project / "examples")
        text = (
            (ROOT / "specs" / "examples.yaml")
            .read_text()
            .replace("gradverify.examples.", "examples.")
        )
        (project / "specs.yaml").write_text(text)
        first = timed([gradverify, "check", "specs.yaml"], project)
        cached = min(timed([gradverify, "check", "specs.yaml"], project) for _ in range(3))
        rows.append(("unchanged suite from the cache vs its first run", first, cached))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the slow plain-gradcheck rows")
    parser.add_argument(
        "--processes", action="store_true", help="only the whole-process rows (start-up included)"
    )
    parser.add_argument("--plugin", action="store_true", help="only the pytest plugin rows")
    arguments = parser.parse_args()
    quick = arguments.quick
    os.chdir(ROOT)
    torch.set_num_threads(os.cpu_count() or 1)
    rows: list[tuple[str, float | None, float]] = []
    if arguments.plugin:
        _print(plugin_vs_cli(repeat=3))
        return
    if arguments.processes:
        rows += whole_process(repeat=5)
        _print(rows)
        return
    rows += small_suite(repeat=3)
    if not quick:
        rows.append(linear_64(repeat=1))
    rows.append(elementwise(10_000, repeat=1, with_plain=not quick))
    rows.append(elementwise(1_000_000, repeat=1, with_plain=False))
    rows.append(localization(repeat=1))
    rows += command_times()
    rows += plugin_vs_cli(repeat=3)
    rows += whole_process(repeat=3)
    _print(rows)


def _print(rows: list[tuple[str, float | None, float]]) -> None:
    print(f"torch {torch.__version__}, {os.cpu_count()} cores\n")
    print("| case | baseline (s) | gradverify (s) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for name, baseline, ours in rows:
        base = f"{baseline:.3f}" if baseline is not None else "out of reach"
        ratio = f"{ours / baseline:.2f}×" if baseline else "—"
        print(f"| {name} | {base} | {ours:.3f} | {ratio} |")


if __name__ == "__main__":
    main()
