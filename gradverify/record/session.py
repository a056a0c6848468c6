"""`pytest --gradverify-record`: record in the test process (and in the processes it starts,
xdist workers too), then write the specs when the session ends."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from gradverify.errors import GradverifyError
from gradverify.record import probe

_RECORDS = pytest.StashKey[Path]()
_SAVED = pytest.StashKey[dict[str, str | None]]()
_LINES = pytest.StashKey[list[str]]()


def start(config: pytest.Config) -> None:
    """Install the probe; the process that started recording owns the records file."""
    inherited = os.environ.get(probe.ENV)
    if inherited:  # an xdist worker, or pytest run by `gradverify record`: its parent writes
        probe.install(inherited)
        return
    from gradverify.record.run import recording_environment

    records = Path(tempfile.mkdtemp(prefix="gradverify-record-")) / "calls.jsonl"
    records.touch()
    environment = recording_environment(records, os.environ)
    config.stash[_SAVED] = {name: os.environ.get(name) for name in ("PYTHONPATH", probe.ENV)}
    os.environ.update({name: environment[name] for name in ("PYTHONPATH", probe.ENV)})
    config.stash[_RECORDS] = records
    probe.install(str(records))


def finish(config: pytest.Config) -> None:
    """Write the specs from what every process recorded."""
    records = config.stash.get(_RECORDS, None)
    if records is None:
        return
    for name, value in config.stash[_SAVED].items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    from gradverify.record.records import read_records
    from gradverify.record.run import update_lines, write_specs
    from gradverify.spec.config import load_config

    project = config.invocation_params.dir
    calls = read_records(records)
    shutil.rmtree(records.parent, ignore_errors=True)
    spec_paths = load_config(project).spec_paths
    spec_dir = Path(spec_paths[0]) if spec_paths else project / "specs"
    try:
        updates = write_specs(calls, spec_paths, spec_dir, project=project)
    except GradverifyError as error:
        config.stash[_LINES] = [f"error: {error.render()}"]
        return
    lines = [f"recorded {len(calls)} distinct call(s) of {len(updates)} Function(s) and op(s)"]
    config.stash[_LINES] = lines + update_lines(updates)


def report(terminal: Any, config: pytest.Config) -> None:
    lines = config.stash.get(_LINES, None)
    if lines:
        terminal.section("gradverify record")
        for line in lines:
            terminal.write_line(line)
