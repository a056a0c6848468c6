"""Where cases run (issue 24): `--device`, `device =` in [tool.gradverify] and a top-level
`device:` in a spec place every tensor input; a device this machine lacks skips its cases,
and one numbered beyond its GPUs is a usage error naming those it has. No GPU is needed:
the validation point is asked about a machine with one GPU (torch.cuda patched there)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from gradverify.inputs import DeviceUnavailable, NoSuchDevice, require_device
from gradverify.run import session
from gradverify.spec.config import Config, Settings, with_defaults
from gradverify.spec.load import parse_spec
from gradverify.spec.models import TensorInput
from tests.conftest import ROOT, working_directory

SPEC = """
target: tests.functions.correct:Mul
{top}cases:
  - name: vector
    inputs:
      - {{shape: [4]}}
      - {{shape: [4]{own}}}
"""


def _spec_text(top: str = "", own: str = "") -> str:
    return SPEC.format(top=f"{top}\n" if top else "", own=own)


def _devices(text: str, settings: Settings | None = None) -> list[str]:
    entries = parse_spec(textwrap.dedent(text), "spec.yaml")
    if settings is not None:
        entries = with_defaults(entries, Config(settings))
    (entry,) = entries
    return [item.device for item in entry.spec.cases[0].inputs if isinstance(item, TensorInput)]


@pytest.fixture
def one_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.cuda as a machine with one H200 shows it."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "NVIDIA H200")


def test_a_device_numbered_beyond_the_machines_is_named_with_those_it_has(one_gpu: None) -> None:
    require_device("cuda")
    require_device("cuda:0")
    with pytest.raises(NoSuchDevice) as missing:
        require_device("cuda:3")
    assert str(missing.value) == (
        "device 'cuda:3' does not exist: this machine has cuda:0 (NVIDIA H200)"
    )


def test_a_device_kind_the_machine_lacks_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    require_device("cpu")
    with pytest.raises(DeviceUnavailable):
        require_device("cuda:3")


def test_device_option_beyond_the_machines_gpus_is_a_usage_error(one_gpu: None) -> None:
    result = CliRunner().invoke(
        app, ["check", "specs/examples.yaml", "--device", "cuda:3", "--no-cache"]
    )
    assert result.exit_code == ExitCode.USAGE
    assert "this machine has cuda:0 (NVIDIA H200)" in result.output


def test_device_option_of_an_unknown_kind_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["check", "specs/examples.yaml", "--device", "tpu"])
    assert result.exit_code == ExitCode.USAGE
    assert "unknown device 'tpu'" in result.output


def test_a_top_level_device_places_the_inputs_that_name_none() -> None:
    assert _devices(_spec_text(top="device: cuda")) == ["cuda", "cuda"]
    assert _devices(_spec_text(top="device: cuda", own=", device: cpu")) == ["cuda", "cpu"]
    assert _devices(_spec_text()) == ["cpu", "cpu"]


def test_the_configured_device_places_inputs_where_the_spec_names_none() -> None:
    configured = Settings(device="cuda")
    assert _devices(_spec_text(), configured) == ["cuda", "cuda"]
    assert _devices(_spec_text(own=", device: cpu"), configured) == ["cuda", "cpu"]
    assert _devices(_spec_text(top="device: cpu"), configured) == ["cpu", "cpu"]


def test_device_option_runs_every_case_there_and_skips_where_the_machine_has_none(
    tmp_path: Path, find: Callable[..., list[Any]]
) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the cases would run there")
    entries = parse_spec(textwrap.dedent(_spec_text(own=", device: cpu")), "spec.yaml")
    with working_directory(ROOT):
        report = session.run(
            entries, session.RunOptions(isolation=False, cache=False, device="cuda")
        )
        on_cpu = session.run(
            parse_spec(textwrap.dedent(_spec_text(top="device: cuda")), "spec.yaml"),
            session.RunOptions(isolation=False, cache=False, device="cpu"),
        )
    assert report.results and all(r.status.value == "skip" for r in report.results)
    assert "device 'cuda' is not available on this machine" in report.results[0].message
    assert find(on_cpu, status="pass") and not find(on_cpu, status="skip", check="forward")


def test_a_spec_device_beyond_the_machines_gpus_is_a_usage_error(
    one_gpu: None, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(_spec_text(top="device: cuda:3"), encoding="utf-8")
    with working_directory(ROOT):
        result = CliRunner().invoke(app, ["check", str(spec), "--no-isolation", "--no-cache"])
    assert result.exit_code == ExitCode.USAGE
    assert "device 'cuda:3' does not exist: this machine has cuda:0 (NVIDIA H200)" in result.output
