"""`gradverify record` writes `gradient: surrogate` into a new spec where the words of the
code say backward is a surrogate on purpose, by the rule inference follows (a class named
...STE, the docstring of the class that calls the Function saying natural gradient), with
the comment `init` writes beside it; so a correct Function that zero-config passes passes
on its recorded spec too. What forward's construction says (a grad_output handed on where
forward is piecewise constant) is left to the checks, which judge it on every case
(gradverify.engine.intent). A Function nothing declares keeps every check, and its bug."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.record.recording import record, spec

SCRIPT = """\
import torch
from tests.functions.package_patterns import NaturalParameterModel
from tests.functions.recorded_surrogates import (
    DoubleForgotFactor, NaturalGradientLinear, RoundToGrid, SignSTE, SoftSignLayer,
)

SignSTE.apply(torch.randn(6, requires_grad=True)).sum().backward()
NaturalParameterModel(torch.randn(5, requires_grad=True)).mean().sum().backward()
layer = NaturalGradientLinear(torch.randn(3, 4, requires_grad=True))
layer(torch.randn(8, 4, requires_grad=True)).pow(2).sum().backward()
SoftSignLayer()(torch.randn(7, requires_grad=True)).sum().backward()
RoundToGrid.apply(torch.randn(4, 3, requires_grad=True)).sum().backward()
DoubleForgotFactor.apply(torch.randn(5, requires_grad=True)).sum().backward()
"""
SURROGATES = (
    "sign_ste.yaml", "exp_to_mean_parameters.yaml", "kronecker_factored_linear.yaml",
)  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("surrogate")
    (project / "script.py").write_text(SCRIPT)
    record(project)
    return project


def _called_at(module: str, function: str) -> int:
    """The line of tests/functions/MODULE.py that calls `FUNCTION.apply`."""
    lines = (ROOT / "tests" / "functions" / f"{module}.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if f"{function}.apply(" in line)


def _gradient_line(text: str) -> str | None:
    return next((line for line in text.splitlines() if line.startswith("gradient:")), None)


def test_a_surrogate_the_code_declares_is_written_in_the_new_spec(recorded: Path) -> None:
    gradients = {
        path.name: spec(recorded, path.name).get("gradient")
        for path in (recorded / "specs").iterdir()
    }
    assert gradients == {
        "sign_ste.yaml": "surrogate",  # its class name
        "exp_to_mean_parameters.yaml": "surrogate",  # its caller's docstring
        "kronecker_factored_linear.yaml": "surrogate",  # its caller's docstring
        "round_to_grid.yaml": None,  # forward's construction: judged where the checks run
        "soft_sign.yaml": None,  # its caller says it is the true gradient: nothing declared
        "double_forgot_factor.yaml": None,  # grad_output passed on, but 2 x moves with x
    }
    mean = _called_at("package_patterns", "ExpToMeanParameters")
    linear = _called_at("recorded_surrogates", "KroneckerFactoredLinear")
    lines = {name: _gradient_line((recorded / "specs" / name).read_text()) for name in SURROGATES}
    assert lines == {
        "sign_ste.yaml": "gradient: surrogate   # its name, SignSTE, says so",
        "exp_to_mean_parameters.yaml": (
            "gradient: surrogate   # the docstring of NaturalParameterModel "
            f"(package_patterns.py:{mean}), which calls it, says 'natural gradient'"
        ),
        "kronecker_factored_linear.yaml": (
            "gradient: surrogate   # the docstring of NaturalGradientLinear "
            f"(recorded_surrogates.py:{linear}), which calls it, says 'natural gradient'"
        ),
    }


def test_the_comment_is_the_one_init_writes(recorded: Path) -> None:
    from gradverify.inference.from_signature import infer
    from gradverify.inference.spec_text import spec_text
    from gradverify.target.loading import load_target

    for name in SURROGATES[:2]:
        target = spec(recorded, name)["target"]
        inferred = _gradient_line(spec_text(infer(load_target(target))))
        assert inferred is not None
        assert _gradient_line((recorded / "specs" / name).read_text()) == inferred


def test_the_surrogates_pass_their_recorded_specs_and_a_bug_still_fails(
    recorded: Path, run_spec, find
) -> None:
    for name in SURROGATES:
        report = run_spec(recorded / "specs" / name)
        failed = find(report, status="fail")
        assert not failed, [(r.check, r.message) for r in failed]
        assert find(report, check="finite_difference", status="skip")
    rounded = run_spec(recorded / "specs" / "round_to_grid.yaml")  # by forward's construction
    assert not find(rounded, status="fail")
    assert all(r.surrogate for r in find(rounded, check="finite_difference", status="pass"))
    exact = run_spec(recorded / "specs" / "soft_sign.yaml")
    assert not find(exact, status="fail")
    assert find(exact, check="finite_difference", status="pass")  # still compared
    buggy = run_spec(recorded / "specs" / "double_forgot_factor.yaml")
    failed = find(buggy, check="finite_difference", status="fail")
    assert failed and {result.input_index for result in failed} == {0}
