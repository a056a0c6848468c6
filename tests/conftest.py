"""Shared fixtures: run a real spec through the engine, and pick results out of a report."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

# As the command sets it (gradverify.cli.main) before torch loads: torch's CPU allocator asks
# for transparent huge pages on large buffers. The checks run in this process (run_spec, the
# CLI through CliRunner) and in the fork servers it starts then allocate as they do under the
# command, not faulting each large buffer in 4 KB pages (twice the system time at 10⁷
# elements). Set before any test module imports torch; subprocesses inherit it.
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

# Targets such as `tests.functions.correct:Square` import from the repository root,
# whatever directory pytest was started from.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_configure(config: pytest.Config) -> None:
    """One torch thread per xdist worker: `make test` runs two workers on two cores, and
    more threads than cores make every small BLAS call wait on busy cores."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)
    if DEFAULT_DEVICE:
        _default_device_elsewhere(DEFAULT_DEVICE)


# `make test-device`: every case gradverify runs in this process (run_spec, the CLI with
# isolation off, verify(), explore) runs with torch's default device set to another device than
# the inputs' (which gradverify builds on the spec's device, the CPU), so that a tensor
# gradverify makes without `device=` lands on the wrong device and raises, as it would next
# to CUDA inputs. "meta" holds no data: arithmetic mixing it with a CPU tensor raises. Only
# the cases run under it: tensors a test body makes for its own assertions stay on the CPU.
DEFAULT_DEVICE = os.environ.get("GRADVERIFY_TEST_DEFAULT_DEVICE", "")


def _default_device_elsewhere(device: str) -> None:
    import torch

    from gradverify.engine import case as engine_case

    run_case = engine_case.run_case

    def run_case_elsewhere(*arguments: Any, **keywords: Any) -> Any:
        with torch.device(device):
            ran = run_case(*arguments, **keywords)
        results, notes = ran
        said = [(r.message, r.hint or "", *r.notes, *r.details) for r in results]
        for line in [line for lines in said for line in lines] + list(notes):
            # A check that met a tensor on the default device reports it (or its traceback).
            assert f"device {device}" not in line and f"{device} tensor" not in line, line
        return ran

    engine_case.run_case = run_case_elsewhere  # the callers import it when they run a case


@contextmanager
def working_directory(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test from the repository root, as a user runs gradverify from their project."""
    monkeypatch.chdir(ROOT)
    return ROOT


@pytest.fixture(scope="session")
def fresh_python() -> Callable[[str], str]:
    """`fresh_python(code)`: what `code` prints in a fresh interpreter (what it imports there
    is its own, not this test process's)."""

    def run(code: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
        )
        return done.stdout.strip()

    return run


@pytest.fixture(scope="session")
def run_spec(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Any]:
    """`run_spec(path_or_yaml_text, seed=None)`: parse and run a spec in this process; the Report.

    A Path is read as it is; a string is YAML text (dedented), written to a file first.
    """
    from gradverify.run import session
    from gradverify.spec.load import load_spec_file, parse_spec

    def run(spec: Path | str, seed: int | None = None) -> Any:
        if isinstance(spec, Path):
            entries = load_spec_file(spec)
        else:
            text = textwrap.dedent(spec)
            file = tmp_path_factory.mktemp("spec") / "spec.yaml"
            file.write_text(text, encoding="utf-8")
            entries = parse_spec(text, str(file))
        with working_directory(ROOT):
            options = session.RunOptions(seed=seed, isolation=False, cache=False)
            return session.run(entries, options)

    return run


def _matches(result: Any, fields: dict[str, Any]) -> bool:
    for name, wanted in fields.items():
        value = getattr(result, name)
        if name == "status":
            value = value.value
        if value != wanted:
            return False
    return True


@pytest.fixture(scope="session")
def find() -> Callable[..., list[Any]]:
    """`find(report, **fields)`: the results whose fields equal the given values, in order.

    `status` is compared by its value ("pass", "fail", ...).
    """

    def select(report: Any, **fields: Any) -> list[Any]:
        return [result for result in report.results if _matches(result, fields)]

    return select


@pytest.fixture(scope="session")
def only(find: Callable[..., list[Any]]) -> Callable[..., Any]:
    """`only(report, **fields)`: the one result with those fields (fails if not exactly one)."""

    def select_one(report: Any, **fields: Any) -> Any:
        found = find(report, **fields)
        assert len(found) == 1, f"expected one result with {fields}, got {len(found)}: {found}"
        return found[0]

    return select_one


@pytest.fixture(scope="session")
def bugs_report(run_spec: Callable[..., Any]) -> Any:
    """tests/specs/bugs.yaml, one case per seeded bug class, run once for the whole session."""
    return run_spec(ROOT / "tests" / "specs" / "bugs.yaml")


@pytest.fixture(scope="session")
def buggy_report(run_spec: Callable[..., Any]) -> Any:
    """The bundled specs/buggy.yaml, run once for the whole session."""
    return run_spec(ROOT / "specs" / "buggy.yaml")
