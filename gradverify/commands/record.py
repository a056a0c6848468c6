"""`gradverify record -- COMMAND`: the user's command run with Functions recorded, then specs."""

from __future__ import annotations

import typer

from gradverify.commands.options import FORMAT_NAMES
from gradverify.commands.terminal import plea
from gradverify.exitcodes import ExitCode


def run_record(command: list[str], specs: str | None, shrink: bool) -> int:
    from pathlib import Path

    from gradverify.record.run import record as run_recording
    from gradverify.record.run import summary
    from gradverify.spec.config import load_config

    spec_paths = load_config(formats=FORMAT_NAMES).spec_paths
    spec_dir = Path(specs or (spec_paths[0] if spec_paths else "specs"))
    # `--specs DIR` writes there: the specs in the configured paths are not extended, nor
    # do the signatures they hold keep a call out of DIR.
    searched = [] if specs else spec_paths
    recording = run_recording(command, searched, spec_dir, shrink)
    for line in summary(recording, command):
        typer.echo(line)
    if recording.failed:  # a bug in gradverify, after every other target's specs
        for update in recording.updates:
            if update.failed:
                typer.echo(update.failed, err=True)
        typer.echo(plea(" (shown above with the traceback)"), err=True)
        return ExitCode.INTERNAL
    return ExitCode.OK if recording.exit_code == 0 else ExitCode.FAILED
