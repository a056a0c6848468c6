"""The explore specs (tests/specs/explore/) checked through the CLI, read as the JSON report."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gradverify.cli import app
from tests.conftest import ROOT

SPECS = ROOT / "tests" / "specs" / "explore"


def check(*arguments: str) -> tuple[int, dict]:
    """`gradverify check --no-cache --format json ARGUMENTS`: the exit code (0 or 1) and the
    report."""
    result = CliRunner().invoke(app, ["check", "--no-cache", "--format", "json", *arguments])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)
