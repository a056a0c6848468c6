"""The command line: parse flags, call the engine, pick a renderer, return an exit code.

Kept free of torch at import time so that `--help` and `--version` are instant.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from gradverify import __version__
from gradverify.errors import GradverifyError
from gradverify.exitcodes import ExitCode

if TYPE_CHECKING:
    from gradverify.session import RunOptions

app = typer.Typer(
    name="gradverify",
    help="Verify hand-written torch.autograd.Function gradients before they corrupt training.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


class Mode(str, Enum):
    full = "full"
    randomized = "randomized"
    auto = "auto"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gradverify {__version__}")
        raise typer.Exit(ExitCode.OK)


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
        list[str],
        typer.Argument(
            help="Spec files, directories of specs (every *.yaml/*.yml), or targets "
            "`package.module:Function` / `path/file.py:Function`.",
            show_default=False,
        ),
    ],
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
        OutputFormat,
        typer.Option("--format", help="Report format: text for people, json for scripts."),
    ] = OutputFormat.text,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Show only failures, warnings and the summary.")
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
        typer.Option("--timeout", help="Seconds per case before it fails as timed out [default: 120]."),
    ] = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Cases run in parallel [default: the number of cores].")
    ] = 0,
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
) -> None:
    """Run the checks on spec files, directories of specs, or targets.

    Checks: lint, forward, backward, layouts, finite_difference, gradcheck, gradgradcheck,
    expected_gradient (surrogates), reference (with `reference:`), jvp and vmap.

    Exit codes: 0 nothing failed, 1 a check failed, 2 a usage, spec or target error,
    3 an internal error of gradverify.
    """
    from gradverify.session import RunOptions

    options = RunOptions(
        seed=seed, isolation=isolation, jobs=jobs, timeout=timeout,
        mode=mode.value if mode else None, cache=cache,
    )  # fmt: skip
    code = _guarded(lambda: _check(paths, spec, options, output_format, quiet))
    raise typer.Exit(code)


def _check(
    paths: list[str],
    spec: str | None,
    options: RunOptions,
    output_format: OutputFormat,
    quiet: bool,
) -> int:
    from gradverify import session
    from gradverify.plan import make_plan
    from gradverify.progress import progress_listener
    from gradverify.report import FORMATS, RenderOptions

    plan = make_plan(paths, spec)
    entries = list(plan.entries)
    notes = []
    if plan.bare_targets:
        from gradverify.target import load_target
        from gradverify.zeroconfig import infer_entry

        for bare in plan.bare_targets:
            entry, note = infer_entry(load_target(bare))
            entries.append(entry)
            notes.append(note)
    show_progress = output_format is OutputFormat.text and sys.stderr.isatty()
    with progress_listener(enabled=show_progress) as listener:
        report = session.run(entries, options, notes, listener)
    render_options = RenderOptions(color=_use_color(), width=_width(), quiet=quiet)
    sys.stdout.write(FORMATS[output_format.value](report, render_options))
    return ExitCode.OK if report.passed else ExitCode.FAILED


def _guarded(action: Callable[[], int]) -> int:
    """User errors become one clear message (exit 2); our own bugs a plea for a report (exit 3)."""
    try:
        return action()
    except GradverifyError as error:
        typer.echo(f"error: {error.render()}", err=True)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except Exception as error:
        from gradverify.session import InternalError

        if isinstance(error, InternalError):  # gradverify failed inside a worker process
            typer.echo(str(error), err=True)
        else:
            traceback.print_exc()
        typer.echo(
            f"internal error in gradverify {__version__}: this is a bug in gradverify, not in your code. "
            "Please report it with the traceback above.",
            err=True,
        )
        return ExitCode.INTERNAL


def _use_color() -> bool:
    from rich.console import Console

    console = Console(file=sys.stdout)
    return console.is_terminal and not console.no_color and "NO_COLOR" not in os.environ


def _width() -> int:
    from rich.console import Console

    return max(60, min(Console(file=sys.stdout).width, 140)) if sys.stdout.isatty() else 100


def main() -> None:
    app()
