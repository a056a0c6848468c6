"""A legacy Function (non-static forward) is a failure that says torch refuses to run it,
in a package run, as a target and under a spec: never "forward rejected every shape"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.errors import TargetError
from gradverify.target.legacy import REFUSED
from gradverify.target.loading import load_target
from tests.functions import legacy

ROOT = Path(__file__).resolve().parents[1]
MODULE = "tests.functions.legacy"
SCALE = f"{MODULE}:LegacyScale"
SQUARE = f"{MODULE}:LegacySquare"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    return tmp_path


def check(*arguments: str) -> tuple[int, dict]:
    options = ("--no-cache", "--no-isolation", "--format", "json")
    result = CliRunner().invoke(app, ["check", *arguments, *options])
    return result.exit_code, json.loads(result.stdout)


def test_torch_refuses_to_run_a_legacy_function_as_written() -> None:
    """What the failure claims: calling it as its callers do raises."""
    with (
        pytest.warns(DeprecationWarning, match="should not be instantiated"),
        pytest.raises(RuntimeError, match="non-static forward method is deprecated"),
    ):
        legacy.LegacySquare()(torch.ones(2))


@pytest.mark.parametrize("target", [SCALE, SQUARE])
def test_loading_a_legacy_function_says_torch_refuses_it(target: str) -> None:
    with pytest.raises(TargetError) as raised:
        load_target(target)

    assert raised.value.message.startswith(f"{REFUSED}: a legacy Function (non-static forward")


def test_a_new_style_forward_under_a_decorator_is_no_legacy_function() -> None:
    target = load_target(f"{MODULE}:DecoratedDouble")

    assert target.call(torch.ones(2)).tolist() == [2.0, 2.0]


def test_a_package_run_fails_each_legacy_function_and_lists_why(project: Path) -> None:
    code, report = check(MODULE)

    assert code == 1
    failed = {r["target"]: r for r in report["results"] if r["status"] == "fail"}
    assert set(failed) == {SCALE, SQUARE}
    assert all(r["message"].startswith(REFUSED) and not r["usage"] for r in failed.values())
    assert report["coverage"]["inferred"] == [f"{MODULE}:DecoratedDouble"]
    reasons = {u["target"]: u["reason"] for u in report["coverage"]["without_inputs"]}
    assert reasons[SCALE] == f"failed above: {REFUSED}: a legacy Function"
    assert not any("rejected every shape" in reason for reason in reasons.values())


def test_a_legacy_target_is_a_failure_not_an_error_of_usage(project: Path) -> None:
    code, report = check(SCALE)

    assert code == 1
    (result,) = report["results"]
    assert result["status"] == "fail" and not result["usage"]
    assert result["case"] == "refused by torch"


def test_a_spec_for_a_legacy_function_fails_at_its_case(project: Path) -> None:
    spec = project / "legacy.yaml"
    spec.write_text(
        f"target: {SCALE}\ncases:\n  - name: vector\n    inputs: [{{shape: [4]}}]\n",
        encoding="utf-8",
    )

    code, report = check(str(spec))

    assert code == 1
    (result,) = report["results"]
    assert (result["case"], result["status"], result["usage"]) == ("vector", "fail", False)
    assert result["message"].startswith(REFUSED)
    assert result["spec_line"] == 3
