"""The command line: parse flags, call the engine, pick a renderer, return an exit code.

Kept free of torch at import time so that `--help` and `--version` are instant.
"""

from __future__ import annotations

import math
import os
import sys
import traceback
from collections.abc import Callable
from typing import Annotated, Optional

import typer

from gradverify._version import __version__
from gradverify.commands.check import Scope, run_check
from gradverify.commands.init import run_init
from gradverify.commands.options import Mode, OutputFormat
from gradverify.commands.record import run_record
from gradverify.commands.terminal import plea
from gradverify.errors import GradverifyError
from gradverify.exitcodes import ExitCode
from gradverify.run import interrupts

app = typer.Typer(
    name="gradverify",
    help="Verify hand-written torch.autograd.Function gradients before they corrupt training.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gradverify {__version__}")
        raise typer.Exit(ExitCode.OK)


def _positive_seconds(value: float | None) -> float | None:
    """--timeout: the standard usage error (exit 2) for a time that is not a positive number."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"{value:g} is not a finite number of seconds greater than 0.")
    return value


def _device(value: str | None) -> str | None:
    """--device: the standard usage error (exit 2) for a device this machine cannot have."""
    if value is None:
        return None
    from gradverify.commands.options import checked_device

    try:
        return checked_device(value)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None


@app.callback()
def _root(
    version: Annotated[
        Optional[bool],  # noqa: UP045 - typer reads the annotation at run time on 3.10 too
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = None,
) -> None:
    """gradverify: verify custom autograd Functions (forward, backward, finite differences,
    gradcheck and gradgradcheck) from a YAML spec, with a report that names the wrong element."""


@app.command()
def check(
    paths: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(
            help="Spec files, directories of specs (every *.yaml/*.yml), or targets: a "
            "Function or function `package.module:Attr` / `path/file.py:Attr` (a "
            "torch.library.custom_op object too), a custom op `package.module:ns::name` "
            "(registered by importing the module) or `op:ns::name` (already registered). "
            "A package or module name (`mypkg`), or a directory of Python code and no YAML: "
            "every Function and custom op its code defines, with gradient coverage. "
            "A plain `file.py` is a changed file: the specs whose code lives in it or imports "
            "it run. None: the configured spec paths ([tool.gradverify] specs, default specs/).",
            show_default=False,
        ),
    ] = None,
    spec: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--spec", help="A spec whose cases apply to the targets given on the command line."
        ),
    ] = None,
    seed: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--seed", help="Override every spec's seed."),
    ] = None,
    output_format: Annotated[
        Optional[OutputFormat],  # noqa: UP045 - None: [tool.gradverify] format, else text
        typer.Option(
            "--format",
            help="Report format: text for people, json for scripts, junit, github "
            "(Actions annotations), sarif (code scanning) or html (a page to keep) for CI.",
        ),
    ] = None,
    output: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the --format report to FILE; the terminal still gets the text report.",
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="Show only failures and the summary (warnings counted)."
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Show every check of every case, passed or not, with its time."
        ),
    ] = False,
    mode: Annotated[
        Optional[Mode],  # noqa: UP045
        typer.Option(
            "--mode",
            help="full: whole Jacobians; randomized: random projections with localization "
            "(for large inputs); auto (the spec's default): by size.",
        ),
    ] = None,
    timeout: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--timeout",
            help="Seconds per case before it fails as timed out [default: 120].",
            callback=_positive_seconds,
        ),
    ] = None,
    explore: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--explore",
            metavar="N",
            min=0,
            max=10_000,
            help="N further draws per case (new seeds, edge values, ties, both signs, other "
            "numbers) searching for an input that fails; a failure found is shrunk to a case to "
            "paste into the spec; 0: off [default: the spec's `explore:`, else up to 20 within "
            "half the time the case took so far].",
            show_default=False,
        ),
    ] = None,
    device: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--device",
            metavar="DEVICE",
            help="Run every case's tensor inputs on DEVICE (cpu, cuda, cuda:N); a machine without "
            "one skips the cases [default: each spec's `device:`, else [tool.gradverify] "
            "device, else cpu].",
            callback=_device,
            show_default=False,
        ),
    ] = None,
    jobs: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--jobs", "-j", min=1, help="Cases run in parallel [default: the number of cores]."
        ),
    ] = None,
    isolation: Annotated[
        bool,
        typer.Option(
            "--isolation/--no-isolation",
            help="Run each case in a worker process, so a crash or hang in your code fails only "
            "that case. --no-isolation runs in this process (for debuggers).",
        ),
    ] = True,
    cache: Annotated[
        bool,
        typer.Option(
            "--cache/--no-cache",
            help="Report cases unchanged since a passing run from .gradverify_cache/.",
        ),
    ] = True,
    all_files: Annotated[
        bool,
        typer.Option(
            "--all-files", help="Every spec in the configured spec paths, whatever PATHS says."
        ),
    ] = False,
    extra_check: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--extra-check",
            metavar="ID",
            help="Also run this opt-in check on every spec, e.g. `--extra-check compile` "
            "(repeatable; as `extra_checks` in a spec or [tool.gradverify]).",
            show_default=False,
        ),
    ] = None,
    require_specs: Annotated[
        bool,
        typer.Option(
            "--require-specs",
            help="With a package or a directory of code: fail (exit 1) when a Function or op "
            "it defines is named by no spec, listing them (inferred inputs do not count).",
        ),
    ] = False,
    changed_files: Annotated[
        bool,
        typer.Option(
            "--changed-files",
            help="PATHS are changed files (the pre-commit hook): YAML files run only when they "
            "lie in a configured spec path, and files that are neither specs nor Python are "
            "ignored.",
        ),
    ] = False,
) -> None:
    """Run the checks on spec files, directories of specs, or targets.

    Checks: lint, forward, backward, layouts, finite_difference, gradcheck, gradgradcheck,
    expected_gradient (surrogates), reference (with `reference:`), jvp, vmap, func
    (torch.func transforms), opcheck (custom ops) and compile (torch.compile: opt-in, with
    --extra-check compile or `extra_checks`; on by default for custom ops).

    Exit codes: 0 nothing failed, 1 a check failed, 2 a usage, spec or target error,
    3 an internal error of gradverify.
    """
    from gradverify.run.session import RunOptions

    options = RunOptions(
        seed=seed, isolation=isolation, jobs=jobs or 0, timeout=timeout,
        mode=mode.value if mode else None, cache=cache, explore=explore, device=device,
    )  # fmt: skip
    scope = Scope(
        all_files=all_files, changed_files=changed_files, jobs=jobs,
        extra_checks=tuple(extra_check or ()), require_specs=require_specs,
    )  # fmt: skip
    code = _guarded(
        lambda: run_check(paths or [], spec, options, output_format, quiet, scope, output, verbose)
    )
    raise typer.Exit(code)


@app.command()
def init(
    target: Annotated[
        str,
        typer.Argument(
            help="The Function: `package.module:Function` or `path/file.py:Function`.",
            show_default=False,
        ),
    ],
    output: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--output", "-o", help="Where to write the spec [default: specs/<name>.yaml]."
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    isolation: Annotated[
        bool,
        typer.Option("--isolation/--no-isolation", help="Try the spec in a worker process."),
    ] = True,
) -> None:
    """Write a starter spec by reading forward's signature, try it, and say what to adjust.

    Exit codes: 0 written and passing, 1 written but the trial failed, 2 a usage or target error.
    """
    code = _guarded(lambda: run_init(target, output, force, isolation))
    raise typer.Exit(code)


@app.command()
def record(
    command: Annotated[
        list[str],
        typer.Argument(
            help="The command to run, after `--`: your tests, a training step, a script.",
            show_default=False,
        ),
    ],
    specs: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--specs",
            metavar="DIR",
            help="Where new specs go [default: the first configured spec path, else specs/].",
        ),
    ] = None,
    shrink: Annotated[
        bool,
        typer.Option(
            "--shrink/--no-shrink",
            help="Halve large recorded shapes while forward and backward still run on them.",
        ),
    ] = True,
) -> None:
    """Run COMMAND, record every autograd Function and custom op it calls, and write a spec
    case per distinct signature (never changing a case that is there already).

    Exit codes: 0 recorded, 1 the command failed (specs are written from what it recorded),
    2 a usage error (the command cannot be run).
    """
    code = _guarded(lambda: run_record(command, specs, shrink))
    raise typer.Exit(code)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the spec format, for editors (yaml-language-server) and CI."""
    import json

    from gradverify.authoring import spec_schema

    typer.echo(json.dumps(spec_schema(), indent=2))


@app.command()
def checks() -> None:
    """List every check id with a one-line description, in the order checks run."""
    from gradverify.authoring import check_list

    listing = check_list()
    width = max(len(check) for check, _ in listing)
    for check, description in listing:
        typer.echo(f"{check.ljust(width)}  {description}")


@app.command()
def explain(
    name: Annotated[
        str | None,
        typer.Argument(
            help="A check id (`gradverify checks`), a topic (surrogate, approximate, kinks) "
            "or a lint rule id such as GV103; none lists them all.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Show what a check or a topic is about and how to fix its common failures."""
    from gradverify.authoring import explain as explanation

    def show() -> int:
        typer.echo(explanation(name))
        return ExitCode.OK

    raise typer.Exit(_guarded(show))


def _guarded(action: Callable[[], int]) -> int:
    """User errors become one clear message (exit 2); our own bugs a plea for a report (exit 3)."""
    try:
        with interrupts.armed():
            return action()
    except GradverifyError as error:
        typer.echo(f"error: {error.render()}", err=True)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except Exception as error:
        from gradverify.run.session import InternalError

        if isinstance(error, InternalError):  # gradverify failed inside a worker process
            typer.echo(str(error), err=True)
        else:
            traceback.print_exc()
        typer.echo(plea(), err=True)
        return ExitCode.INTERNAL


def main() -> None:
    # torch's CPU allocator asks for transparent huge pages on buffers of 2 MB and more: a
    # 10⁷-element check allocates hundreds of 80 MB buffers, and faulting each in 4 KB pages
    # cost more system time than the checks' own work (112 s against 48 s wall). Read once,
    # when torch loads, so it is set before anything imports torch (workers inherit it).
    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
    interrupts.install()
    try:
        app()
        code: int | str | None = ExitCode.OK
    except SystemExit as exit:
        code = exit.code
    # Stopped here rather than at exit, so that a Ctrl-C during the stop still counts. A run
    # that started no server never imported its module.
    forkserver = sys.modules.get("gradverify.run.forkserver")
    if forkserver is not None:
        forkserver.stop()
    if interrupts.release() and code != ExitCode.INTERRUPTED:  # came while exiting
        typer.echo("interrupted", err=True)
        code = ExitCode.INTERRUPTED
    sys.exit(code)
