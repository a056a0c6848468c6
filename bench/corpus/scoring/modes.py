"""The modes scored: each runs gradverify on some corpus Functions as a user of that mode would,
and returns the JSON report, the text report's line count and the time it took.

Every mode runs in a scratch directory of its own, so that no spec of the corpus's own
(specs/) is seen by the inferred modes, with the corpus on PYTHONPATH so that its targets
import. Explore is off outside the explore mode: its default is a time budget, whose number of
draws depends on the machine's load, and a scoreboard must give the same verdict on every run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from scoring.manifest import CORPUS, Function

MODES = ("zero-config", "init", "record", "explore", "specs")
EXPLORE_DRAWS = 20


@dataclass(frozen=True)
class Run:
    """What one mode gave on one part."""

    mode: str
    part: str
    results: list[dict]
    coverage: dict | None
    report_lines: int
    seconds: float
    # targets the mode could not give a case, with why (init wrote no spec, record saw no call)
    not_reached: dict[str, str] = field(default_factory=dict)
    exit_code: int = 0


@dataclass(frozen=True)
class Tool:
    """How to start gradverify and the corpus's Python."""

    gradverify: Sequence[str]
    python: str
    jobs: int = 2
    timeout: float = 900.0

    def env(self, extra_path: Sequence[Path] = ()) -> dict[str, str]:
        env = dict(os.environ)
        paths = [str(CORPUS), *map(str, extra_path)]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env["TRITON_INTERPRET"] = "1"
        env["NO_COLOR"] = "1"
        env["COLUMNS"] = "100"
        env.pop("FORCE_COLOR", None)
        return env

    def run(self, command: Sequence[str], workdir: Path) -> subprocess.CompletedProcess[str]:
        """`command` in `workdir` with the corpus importable; past the timeout, exit 124."""
        try:
            return subprocess.run(
                list(command),
                cwd=workdir,
                env=self.env(),
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as expired:
            said = f"timed out after {self.timeout:.0f} s: {' '.join(command)}"
            return subprocess.CompletedProcess(command, 124, str(expired.stdout or ""), said)


def _check(tool: Tool, paths: Sequence[str], workdir: Path, *extra: str) -> tuple[dict, int, int]:
    """`gradverify check PATHS`: the JSON report, the text report's lines, the exit code."""
    report = workdir / "report.json"
    command = [
        *tool.gradverify,
        "check",
        *paths,
        "--no-cache",
        "--format",
        "json",
        "-o",
        str(report),
        "-j",
        str(tool.jobs),
        *extra,
    ]
    completed = tool.run(command, workdir)
    if not report.is_file():
        message = (completed.stderr or completed.stdout).strip().splitlines()[-5:]
        document = {"results": [], "coverage": None, "error": "\n".join(message)}
    else:
        document = json.loads(report.read_text(encoding="utf-8"))
    return document, len(completed.stdout.splitlines()), completed.returncode


def _run(mode: str, part: str, started: float, document: dict, lines: int, code: int, **kw) -> Run:
    return Run(
        mode,
        part,
        document.get("results", []),
        document.get("coverage"),
        lines,
        time.monotonic() - started,
        exit_code=code,
        **kw,
    )


def zero_config(tool: Tool, part: str, functions: list[Function], workdir: Path) -> Run:
    """`gradverify check PART`: the part as a package, every input inferred."""
    started = time.monotonic()
    document, lines, code = _check(tool, _check_paths(part, functions), workdir, "--explore", "0")
    return _run("zero-config", part, started, document, lines, code)


def explore(tool: Tool, part: str, functions: list[Function], workdir: Path) -> Run:
    """Zero-config with a fixed number of explore draws per case (a count, not a budget)."""
    started = time.monotonic()
    paths = _check_paths(part, functions)
    document, lines, code = _check(tool, paths, workdir, "--explore", str(EXPLORE_DRAWS))
    return _run("explore", part, started, document, lines, code)


def specs(tool: Tool, part: str, functions: list[Function], workdir: Path) -> Run:
    """The manifest's own specs: what a careful user would write."""
    started = time.monotonic()
    spec_dir = CORPUS / "specs" / part
    document, lines, code = _check(tool, [str(spec_dir)], workdir, "--explore", "0")
    return _run("specs", part, started, document, lines, code)


def init(tool: Tool, part: str, functions: list[Function], workdir: Path) -> Run:
    """`gradverify init` for each Function, then a check of the specs it wrote."""
    started = time.monotonic()
    spec_dir = workdir / "specs"
    spec_dir.mkdir(parents=True, exist_ok=True)

    def one(index_function: tuple[int, Function]) -> tuple[Function, str | None]:
        index, function = index_function
        out = spec_dir / f"{index:03d}.yaml"
        completed = tool.run(
            [*tool.gradverify, "init", function.target, "-o", str(out), "--force"], workdir
        )
        if out.is_file():
            return function, None
        said = (completed.stderr or completed.stdout).strip().splitlines()
        return function, (said[0] if said else f"init exited {completed.returncode}")

    with ThreadPoolExecutor(max_workers=tool.jobs) as pool:
        outcomes = list(pool.map(one, enumerate(functions)))
    not_reached = {function.key: f"init wrote no spec: {why}" for function, why in outcomes if why}
    if len(not_reached) == len(functions):
        return _run("init", part, started, {}, 0, 2, not_reached=not_reached)
    document, lines, code = _check(tool, [str(spec_dir)], workdir, "--explore", "0")
    return _run("init", part, started, document, lines, code, not_reached=not_reached)


def record(
    tool: Tool,
    part: str,
    functions: list[Function],
    workdir: Path,
    usage: Callable[[str], list[str]] | None = None,
) -> Run:
    """`gradverify record -- <usage>` per module, then a check of the specs it wrote.

    `usage(module)` is the command that uses a module's Functions (default: use.py).
    """
    started = time.monotonic()
    spec_dir = workdir / "specs"
    modules = sorted({function.module for function in functions})
    command = usage or (lambda module: [tool.python, str(CORPUS / "use.py"), module])
    commands = list(dict.fromkeys(tuple(command(module)) for module in modules))
    for usage_command in commands:
        tool.run(
            [*tool.gradverify, "record", "--specs", str(spec_dir), "--", *usage_command], workdir
        )
    if not spec_dir.is_dir() or not any(spec_dir.glob("*.y*ml")):
        not_reached = {function.key: "record wrote no spec" for function in functions}
        return _run("record", part, started, {}, 0, 2, not_reached=not_reached)
    document, lines, code = _check(tool, [str(spec_dir)], workdir, "--explore", "0")
    return _run("record", part, started, document, lines, code)


def _check_paths(part: str, functions: list[Function]) -> list[str]:
    """What to name on the command line: the corpus part as a package, or real packages'
    targets one by one (a real package holds much the corpus does not judge)."""
    if all(function.module.split(".")[0] == part for function in functions):
        return [part]
    return [function.target for function in functions]


RUNNERS: dict[str, Callable[..., Run]] = {
    "zero-config": zero_config,
    "init": init,
    "record": record,
    "explore": explore,
    "specs": specs,
}


def default_tool(jobs: int = 2) -> Tool:
    """gradverify and Python from the environment running the scorer."""
    bin_dir = Path(sys.executable).parent
    script = bin_dir / "gradverify"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gradverify"]
    return Tool(command, sys.executable, jobs)
