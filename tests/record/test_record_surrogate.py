"""`gradverify record` writes `gradient: surrogate` into a new spec where the code says
backward is a surrogate on purpose, by the rules inference follows (a class named ...STE,
the docstring of the class that calls the Function saying natural gradient), with the
comment `init` writes beside it; so a correct Function that zero-config passes passes on
its recorded spec too. A Function nothing declares keeps every check."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.record.recording import record, spec

SCRIPT = """\
import torch
from tests.functions.package_patterns import NaturalParameterModel
from tests.functions.recorded_surrogates import NaturalGradientLinear, SignSTE, SoftSignLayer

SignSTE.apply(torch.randn(6, requires_grad=True)).sum().backward()
NaturalParameterModel(torch.randn(5, requires_grad=True)).mean().sum().backward()
layer = NaturalGradientLinear(torch.randn(3, 4, requires_grad=True))
layer(torch.randn(8, 4, requires_grad=True)).pow(2).sum().backward()
SoftSignLayer()(torch.randn(7, requires_grad=True)).sum().backward()
"""
SURROGATES = ("sign_ste.yaml", "exp_to_mean_parameters.yaml", "kronecker_factored_linear.yaml")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("surrogate")
    (project / "script.py").write_text(SCRIPT)
    record(project)
    return project


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
        "soft_sign.yaml": None,  # its caller says it is the true gradient: nothing declared
    }
    lines = {
        name: _gradient_line((recorded / "specs" / name).read_text()) for name in SURROGATES[:2]
    }
    assert lines == {
        "sign_ste.yaml": "gradient: surrogate   # its name SignSTE says so",
        "exp_to_mean_parameters.yaml": (
            "gradient: surrogate   # the docstring of caller NaturalParameterModel "
            "(package_patterns.py:218) says 'natural gradient'"
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


def test_the_correct_surrogates_pass_on_their_recorded_specs(
    recorded: Path, run_spec, find
) -> None:
    for name in SURROGATES:
        report = run_spec(recorded / "specs" / name)
        failed = find(report, status="fail")
        assert not failed, [(r.check, r.message) for r in failed]
        assert find(report, check="finite_difference", status="skip")
    exact = run_spec(recorded / "specs" / "soft_sign.yaml")
    assert not find(exact, status="fail")
    assert find(exact, check="finite_difference", status="pass")  # still compared
