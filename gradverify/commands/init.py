"""`gradverify init`: a starter spec from forward's signature, tried, with what to adjust."""

from __future__ import annotations

import typer

from gradverify.commands.options import FORMAT_NAMES
from gradverify.commands.terminal import tell, use_color, width
from gradverify.exitcodes import ExitCode


def run_init(target: str, output: str | None, force: bool, isolation: bool) -> int:
    from pathlib import Path

    from gradverify import authoring
    from gradverify.report import FORMATS, RenderOptions
    from gradverify.results import Report
    from gradverify.run import session
    from gradverify.run.session import RunOptions
    from gradverify.spec.config import load_config
    from gradverify.spec.load import load_spec_file

    def trial(path: Path) -> Report:
        options = RunOptions(isolation=isolation, cache=False)
        return session.run(load_spec_file(path), options)

    spec_paths = load_config(formats=FORMAT_NAMES).spec_paths
    starter = authoring.init(target, Path(output) if output else None, force, trial, spec_paths)
    typer.echo(f"wrote {starter.path}:\n")
    typer.echo(starter.text)
    if starter.report is not None:
        # As `check` shows it: a warning the summary counts is shown too.
        render_options = RenderOptions(color=use_color(), width=width())
        tell(FORMATS["text"](starter.report, render_options), "stdout")
    for line in starter.advice:
        typer.echo(f"\n{line}")
    if starter.report is not None and starter.report.internal_errors:
        return ExitCode.INTERNAL  # gradverify failed on a case of the trial: shown above
    return ExitCode.OK if starter.passed else ExitCode.FAILED
