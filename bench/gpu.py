"""GPU acceptance: gradverify's verdicts on CUDA against the same runs on the CPU.

    .venv/bin/python bench/gpu.py                 # on a machine with a GPU: every part
    .venv/bin/python bench/gpu.py --dry-run       # anywhere: small sizes, "cuda" played by the CPU
    .venv/bin/python bench/gpu.py --parts specs atomics --device cuda:1

Four parts, each a markdown table on stdout:

- specs: every bundled spec (specs/*.yaml) on the CPU and on the device. Each result is keyed
  by (spec, target, case, check, argument) and the two runs' statuses are compared; a difference is
  listed under the table. The device run uses `gradverify check --device` where the CLI has
  it, otherwise a copy of each spec with `device:` written into every tensor input.
- triton: specs_triton/ (the Triton SiLU, correct and buggy) on the device, against the same
  run on the CPU through Triton's interpreter (TRITON_INTERPRET=1). Needs triton.
- atomics: tests/functions/atomics.py, a backward that accumulates with index_add_ (atomic
  adds on CUDA, so the last bits change from run to run) and its twin that loses repeated
  indices: the correct one must pass and the buggy one fail, on both devices.
- large: ReLU and GELU (tanh) on 10⁷ float64 elements, the whole `gradverify check` run as a
  multiple of one forward+backward on the same device (the best of three, synchronized).
  The device's run includes starting CUDA in the worker.

On a machine without CUDA the CPU runs still happen and every CUDA column says it was
skipped. `--dry-run` runs the device side on the CPU (`--device cpu`) at small sizes, so that
every code path of this script is exercised without a GPU.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
SIZE = 10_000_000
PARTS = ("specs", "triton", "atomics", "large")
ATOMICS = "tests.functions.atomics"
LARGE = (
    ("ReLU", "tests.functions.kinks_at_scale", "MyReLU"),
    ("GELU (tanh)", "tests.functions.smooth_at_scale", "Gelu"),
)
Key = tuple[str, str, str, str, Any]


@dataclass(frozen=True)
class Run:
    """One `gradverify check` subprocess: its exit code, results and wall seconds."""

    code: int
    results: list[dict[str, Any]]
    wall: float
    error: str = ""

    def statuses(self) -> dict[Key, list[str]]:
        """Each (spec file, target, case, check, argument)'s statuses, in report order."""
        found: dict[Key, list[str]] = {}
        for r in self.results:
            spec = Path(r.get("spec_file") or "").name
            key = (spec, r["target"], r["case"], r["check"], r.get("input_index"))
            found.setdefault(key, []).append(r["status"])
        return found

    def verdict(self, target: str | None = None) -> str:
        """'pass', 'fail: check, check' or the error, for one target or the whole run."""
        if self.error:
            return f"error (exit {self.code}): {self.error}"
        chosen = [r for r in self.results if target is None or r["target"] == target]
        failed = sorted({r["check"] for r in chosen if r["status"] == "fail"})
        return f"fail: {', '.join(failed)}" if failed else "pass"


def check(arguments: list[str], environment: dict[str, str] | None = None) -> Run:
    """`gradverify check ARGUMENTS --format json --no-cache`, from the repository root."""
    command = [sys.executable, "-m", "gradverify", "check", *arguments]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--format", "json", "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(environment or {})},
        timeout=1800,
    )
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        # The exception's own line, before the request to report it.
        last = " / ".join(done.stderr.strip().splitlines()[-2:]) or "no output"
        return Run(done.returncode, [], wall, last[:300])
    return Run(done.returncode, json.loads(done.stdout)["results"], wall)


@functools.cache
def device_option() -> bool:
    """Whether this checkout's `gradverify check` takes `--device`."""
    command = [sys.executable, "-m", "gradverify", "check", "--help"]
    helped = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    return "--device" in helped.stdout


def _placed(inputs: Any, device: str) -> Any:
    def place(item: Any) -> Any:
        is_tensor = isinstance(item, dict) and ("shape" in item or "values" in item)
        return {**item, "device": device} if is_tensor else item

    if isinstance(inputs, list):
        return [place(item) for item in inputs]
    if isinstance(inputs, dict):
        return {name: place(item) for name, item in inputs.items()}
    return inputs


def spec_on_device(spec: dict[str, Any], device: str) -> dict[str, Any]:
    """The spec with `device` written into every tensor input of every case."""
    if "functions" in spec:
        return {**spec, "functions": [spec_on_device(f, device) for f in spec["functions"]]}
    cases = [{**case, "inputs": _placed(case.get("inputs"), device)} for case in spec["cases"]]
    return {**spec, "cases": cases}


def check_cpu(specs: Iterable[Path], **environment: str) -> Run:
    """The specs as they are written (on the CPU)."""
    return check([str(path) for path in specs], environment)


def check_on(device: str, specs: Iterable[Path], directory: Path, **environment: str) -> Run:
    """The specs run on `device`: through `--device` where the CLI has it, else rewritten.
    A `cpu` device goes the same way, so that a dry run takes the device's path."""
    paths = [str(path) for path in specs]
    if device_option():
        return check([*paths, "--device", device], environment)
    copies = []
    for path in map(Path, paths):
        copy = directory / device.replace(":", "_") / path.parent.name / path.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        rewritten = spec_on_device(yaml.safe_load(path.read_text(encoding="utf-8")), device)
        copy.write_text(yaml.safe_dump(rewritten, sort_keys=False), encoding="utf-8")
        copies.append(str(copy))
    return check(copies, environment)


def differences(cpu: Run, other: Run) -> list[str]:
    """Each result whose statuses differ between the two runs."""
    if cpu.error or other.error:
        return [f"cpu: {cpu.verdict()}; device: {other.verdict()}"]
    first, second = cpu.statuses(), other.statuses()
    lines = []
    for key in sorted(first.keys() | second.keys(), key=str):
        if first.get(key) != second.get(key):
            spec, target, case, check_id, argument = key
            where = f"{spec}: {target} [{case}] {check_id}" + (
                f" arg {argument}" if argument is not None else ""
            )
            lines.append(f"{where}: cpu {first.get(key)}, device {second.get(key)}")
    return lines


def part_specs(device: str | None, directory: Path, only: list[str] | None) -> None:
    print("\n### Bundled specs, CPU against the device\n")
    print("| spec | results | CPU | device | same verdicts | CPU run | device run |")
    print("|---|---|---|---|---|---|---|")
    listed = []
    for spec in sorted((ROOT / "specs").glob("*.yaml")):
        if only is not None and spec.stem not in only:
            continue
        cpu = check_cpu([spec])
        if device is None:
            print(
                f"| {spec.name} | {len(cpu.results)} | {cpu.verdict()} | skipped (no CUDA) | | {cpu.wall:.1f} s | |"
            )
            continue
        other = check_on(device, [spec], directory)
        found = differences(cpu, other)
        listed += [f"- {line}" for line in found]
        same = "yes" if not found else f"**no** ({len(found)})"
        print(
            f"| {spec.name} | {len(cpu.results)} | {cpu.verdict()} | {other.verdict()} | {same} | {cpu.wall:.1f} s | {other.wall:.1f} s |"
        )
    if listed:
        print("\nDifferences:\n\n" + "\n".join(listed))


def part_triton(device: str | None, directory: Path) -> None:
    print("\n### Triton examples (specs_triton/): CPU interpreter against the device\n")
    try:
        import triton  # noqa: F401
    except ImportError:
        print("skipped: triton is not installed (pip install 'gradverify[triton]')")
        return
    specs = sorted((ROOT / "specs_triton").glob("*.yaml"))
    cpu = check_cpu(specs, TRITON_INTERPRET="1")
    other = None
    if device is not None:
        # On a CPU standing in for the device, the kernels still need the interpreter.
        interpret = {"TRITON_INTERPRET": "0" if device.startswith("cuda") else "1"}
        other = check_on(device, specs, directory, **interpret)
    print("| Function | CPU (interpreter) | device |")
    print("|---|---|---|")
    for target in dict.fromkeys(r["target"] for r in cpu.results):
        shown = "skipped (no CUDA)" if other is None else other.verdict(target)
        print(f"| {target.rpartition(':')[2]} | {cpu.verdict(target)} | {shown} |")
    if other is not None and (found := differences(cpu, other)):
        print("\nDifferences:\n\n" + "\n".join(f"- {line}" for line in found))


def part_atomics(device: str | None, directory: Path) -> None:
    print("\n### index_add_ backward (atomics on CUDA), correct and losing repeated indices\n")
    table = {"shape": [200, 8]}  # 1600 entries, each row picked about 20 times
    index = {"shape": [4000], "low": 0, "high": 199, "dtype": "int64"}
    spec = {
        "functions": [
            {
                "target": f"{ATOMICS}:{name}",
                "cases": [{"name": "repeats", "inputs": [table, index]}],
            }
            for name in ("EmbeddingRows", "EmbeddingRowsLosesRepeats")
        ]
    }
    path = directory / "atomics" / "atomics.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    cpu = check_cpu([path])
    other = None if device is None else check_on(device, [path], directory)
    print("| Function | expected | CPU | device |")
    print("|---|---|---|---|")
    for name, expected in (("EmbeddingRows", "pass"), ("EmbeddingRowsLosesRepeats", "fail")):
        target = f"{ATOMICS}:{name}"
        shown = "skipped (no CUDA)" if other is None else other.verdict(target)
        print(f"| {name} | {expected} | {cpu.verdict(target)} | {shown} |")


def forward_backward(module: str, name: str, size: int, device: str, repeat: int = 3) -> float:
    """The best time of one forward and one backward on `size` elements of `device`."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    function = getattr(__import__(module, fromlist=[name]), name)
    x = (torch.rand(size, dtype=torch.float64, device=device) * 2 - 1).requires_grad_()
    best = float("inf")
    for _ in range(repeat + 1):  # one more: the first call on CUDA loads its kernels
        _synchronize(device)
        started = time.perf_counter()
        y = function.apply(x)
        y.backward(torch.ones_like(y))
        _synchronize(device)
        best = min(best, time.perf_counter() - started)
        x.grad = None
    return best


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def part_large(device: str | None, directory: Path, size: int) -> None:
    print(
        f"\n### ReLU and GELU at {size:.0e} float64 elements: the whole run as multiples of one forward+backward\n"
    )
    print("| Function | device | forward+backward | whole run | × f+b | verdict |")
    print("|---|---|---|---|---|---|")
    for label, module, name in LARGE:
        spec = {
            "target": f"{module}:{name}",
            "cases": [{"name": "large", "inputs": [{"shape": [size]}]}],
        }
        path = directory / "large" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        for where, on_device in (("cpu", False), (device, True)):
            if where is None:
                print(f"| {label} | cuda | | | | skipped (no CUDA) |")
                continue
            unit = forward_backward(module, name, size, where)
            run = check_on(where, [path], directory) if on_device else check_cpu([path])
            shown = f"{where} (as the device)" if on_device and where == "cpu" else where
            print(
                f"| {label} | {shown} | {unit:.3f} s | {run.wall:.1f} s | {run.wall / unit:.0f}× | {run.verdict()} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--device", default="cuda", help="the device to compare with the CPU (default: cuda)"
    )
    parser.add_argument(
        "--parts", nargs="+", choices=PARTS, default=list(PARTS), help="the parts to run"
    )
    parser.add_argument(
        "--size", type=int, default=SIZE, help="elements of the large part (default 10^7)"
    )
    parser.add_argument(
        "--specs", nargs="+", metavar="NAME", help="bundled specs by stem (default: all)"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="the CPU plays the device; 10^5 elements, specs examples and buggy only",
    )
    options = parser.parse_args()
    device: str | None = options.device
    if options.dry_run:
        device, options.size = "cpu", min(options.size, 100_000)
        options.specs = options.specs or ["examples", "buggy"]
    print(f"torch {torch.__version__}; {_machine()}")
    if device is not None and device.startswith("cuda") and not torch.cuda.is_available():
        print(
            f"\nCUDA is not available on this machine: every {device} run is skipped, the CPU runs still happen. `--dry-run` plays the device on the CPU."
        )
        device = None
    elif device is not None and device.startswith("cuda"):
        print(f"device: {torch.cuda.get_device_name(torch.device(device))}")
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        if "specs" in options.parts:
            part_specs(device, directory, options.specs)
        if "triton" in options.parts:
            part_triton(device, directory)
        if "atomics" in options.parts:
            part_atomics(device, directory)
        if "large" in options.parts:
            part_large(device, directory, options.size)


def _machine() -> str:
    cores = os.cpu_count()
    cuda = f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU build of torch"
    return f"{cores} CPU cores; {cuda}"


if __name__ == "__main__":
    main()
