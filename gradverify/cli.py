"""The command line: parse flags, call the engine, pick a renderer, return an exit code.

Kept free of torch at import time so that `--help` and `--version` are instant.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Optional

import typer

from gradverify import __version__
from gradverify.errors import GradverifyError
from gradverify.exitcodes import ExitCode

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
) -> None:
    """Run the checks (forward, backward, finite_difference, gradcheck, gradgradcheck).

    Exit codes: 0 nothing failed, 1 a check failed, 2 a usage, spec or target error,
    3 an internal error of gradverify.
    """
    code = _guarded(lambda: _check(paths, spec, seed, output_format, quiet))
    raise typer.Exit(code)


def _check(
    paths: list[str], spec: str | None, seed: int | None, output_format: OutputFormat, quiet: bool
) -> int:
    from gradverify import engine
    from gradverify.plan import make_plan
    from gradverify.report import FORMATS, RenderOptions
    from gradverify.zeroconfig import infer_entry

    plan = make_plan(paths, spec)
    jobs = engine.prepare(plan.entries)
    notes = []
    for bare in plan.bare_targets:
        target = engine.load_target(bare)
        entry, note = infer_entry(target)
        jobs.append(engine.Job(entry, target))
        notes.append(note)
    report = engine.run(jobs, seed=seed, notes=notes)
    options = RenderOptions(color=_use_color(), width=_width(), quiet=quiet)
    sys.stdout.write(FORMATS[output_format.value](report, options))
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
    except Exception:
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
