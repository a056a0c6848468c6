"""Inference for kernels: zero-config and `init` on a Function that refuses float64 infer
float32 inputs and give the float32 verdicts; a CUDA-only Function on a machine without CUDA
is listed under coverage, and the run goes on. The real CLI, real Functions."""

from __future__ import annotations

import json

import pytest
import torch
import yaml
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from gradverify.inference.from_signature import infer
from gradverify.target.loading import load_target

PACKAGE = "tests.functions.kernels_pkg"
SCALED_TANH = f"{PACKAGE}.ops:ScaledTanh"
CUDA_SQUARE = f"{PACKAGE}.ops:CudaSquare"
WRONG_BRANCH = "tests.functions.kernels:TanhFloat32WrongBranch"


def check_json(*arguments: str) -> tuple[int, dict]:
    result = CliRunner().invoke(
        app, ["check", *arguments, "--format", "json", "--no-isolation", "--no-cache"]
    )
    return result.exit_code, json.loads(result.stdout)


def test_inference_chooses_float32_and_says_why():
    inference = infer(load_target(SCALED_TANH))
    assert inference.stopped is None
    tensors = [choice for _, choices in inference.cases for choice in choices]
    assert {choice.dtype for choice in tensors} == {"float32"}
    assert "forward refuses float64 (TypeError), so float32" in inference.summary()
    assert all(item["dtype"] == "float32" for item in inference.inputs())


def test_zero_config_gives_the_float32_verdicts(in_repo):
    code, report = check_json(SCALED_TANH)
    assert code == ExitCode.OK
    checked = [r for r in report["results"] if r["check"] == "finite_difference"]
    assert checked and all(r["status"] == "pass" and "in float32" in r["message"] for r in checked)
    skipped = [r for r in report["results"] if r["check"] == "gradcheck"]
    assert skipped and all("needs float64" in r["message"] for r in skipped)


def test_zero_config_fails_a_float32_only_wrong_branch_naming_the_argument(in_repo):
    code, report = check_json(WRONG_BRANCH)
    assert code == ExitCode.FAILED
    failed = {(r["check"], r["input_name"]) for r in report["results"] if r["status"] == "fail"}
    assert failed == {("finite_difference", "x")}


def test_init_writes_float32_into_the_spec(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["init", SCALED_TANH, "--no-isolation"])
    assert result.exit_code == ExitCode.OK, result.stdout
    (written,) = (tmp_path / "specs").glob("*.yaml")
    spec = yaml.safe_load(written.read_text())
    inputs = [item for case in spec["cases"] for item in case["inputs"]]
    assert inputs and all(item["dtype"] == "float32" for item in inputs)
    assert all("device" not in item for item in inputs)  # cpu is the default


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_cuda_only_function_is_listed_as_needing_cuda_and_the_run_goes_on(in_repo):
    code, report = check_json("tests/functions/kernels_pkg/")
    assert code == ExitCode.OK
    coverage = report["coverage"]
    assert coverage["inferred"] == [SCALED_TANH]
    (without,) = coverage["without_inputs"]
    assert without["target"] == CUDA_SQUARE
    assert without["reason"].startswith("needs CUDA (this machine has none)")
