"""Surrogates in the reports (gradverify.report.surrogates, issue 28): a pass as a surrogate
says once per Function and argument what it covered, and where many Functions of a package
disagree with the derivative alike, one config line declares them all.

Real runs: tests/functions/intent.py's surrogates by construction, and a package of
Functions that keep one convention (backward leaves out forward's scale, as a Lie-group
package returns the gradient in the tangent space) written to a temporary directory.
"""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.report import FORMATS, RenderOptions
from gradverify.report.surrogates import DECLARATION, patterns
from gradverify.results import Report, Status

INTENT = "tests.functions.intent"
SPIKE = "surrogate: v — forward is piecewise constant in v (`v > 0`)"


@pytest.fixture(scope="module")
def spike(run_spec: Any) -> Report:
    """Spike on three cases, each checked by finite_difference and gradcheck."""
    report: Report = run_spec(
        f"""
        target: {INTENT}:Spike
        checks: [finite_difference, gradcheck]
        cases:
          - {{name: vector, inputs: [{{shape: [4]}}]}}
          - {{name: matrix, inputs: [{{shape: [3, 5]}}]}}
          - {{name: cube, inputs: [{{shape: [2, 3, 4]}}]}}
        """
    )
    return report


def test_a_surrogate_pass_says_its_evidence_once_under_its_first_line(spike: Report) -> None:
    surrogates = [r for r in spike.results if r.surrogate is not None]
    assert len(surrogates) == 6 and all(r.status is Status.PASS for r in surrogates)
    lines = FORMATS["text"](spike, RenderOptions()).splitlines()

    assert [line.strip() for line in lines].count(SPIKE) == 1
    first = next(i for i, line in enumerate(lines) if line.startswith(f"✓ {INTENT}:Spike"))
    assert lines[first + 1] == f"  {SPIKE}"
    assert "its derivative is 0 almost everywhere" not in "\n".join(lines)  # brief


def test_quiet_and_verbose_leave_the_line_out(spike: Report) -> None:
    assert "surrogate: v" not in FORMATS["text"](spike, RenderOptions(quiet=True))
    verbose = FORMATS["text"](spike, RenderOptions(verbose=True))
    assert "surrogate: v —" not in verbose
    assert "a surrogate gradient of v, checked as `gradient: surrogate`" in verbose  # each row


def test_junit_and_html_say_it_once_too(spike: Report) -> None:
    suite = ET.fromstring(FORMATS["junit"](spike, RenderOptions())).find("testsuite")
    assert suite is not None
    said = [p.get("value") for p in suite.iter("property") if p.get("name") == "surrogate"]
    assert said == [SPIKE.removeprefix("surrogate: ")]
    page = FORMATS["html"](spike, RenderOptions())
    assert page.count("surrogate: v — forward is piecewise constant in v") == 1


@pytest.mark.parametrize(
    ("name", "said", "first"),
    [
        ("Route", "surrogate: x_r — forward's output does not depend on x_r", "✓"),
        ("RouteWrong", "surrogate: x_r — forward's output does not depend on x_r", "✗"),
    ],
)
def test_zero_config_says_it_under_the_functions_first_line(
    name: str, said: str, first: str, in_repo: Path
) -> None:
    ran = CliRunner().invoke(app, ["check", f"{INTENT}:{name}", "--no-cache", "--explore", "0"])
    lines = ran.output.splitlines()

    at = next(i for i, line in enumerate(lines) if line.startswith(f"{first} {INTENT}:{name}"))
    assert lines[at + 1] == f"  {said}"
    assert ran.output.count("surrogate: ") == 1
    assert "surrogate: x —" not in ran.output  # x is compared with the derivative


# Many Functions of one package that keep one convention.

_FUNCTION = '''
class Scale{k}(Function):
    """y = {k} x; backward in the tangent space, without the scale."""

    @staticmethod
    def forward(ctx, x):
        return {k} * x

    @staticmethod
    def backward(ctx, g):
        return g
'''
MODULES = {"groups": (2, 3), "algebra": (4, 5)}


@pytest.fixture(scope="module")
def convention(tmp_path_factory: pytest.TempPathFactory, run_spec: Any) -> Report:
    root = tmp_path_factory.mktemp("convention")
    package = root / "tangent"
    package.mkdir()
    (package / "__init__.py").write_text("")
    head = ["from torch.autograd import Function", ""]
    for module, scales in MODULES.items():
        body = [_FUNCTION.format(k=k) for k in scales]
        (package / f"{module}.py").write_text("\n".join([*head, *body]))
    entries = "\n".join(
        f"  - target: tangent.{module}:Scale{k}\n    checks: [finite_difference]\n"
        "    cases: [{name: vector, inputs: [{shape: [4]}]}, {name: matrix, inputs: "
        "[{shape: [2, 3]}]}]"
        for module, scales in MODULES.items()
        for k in scales
    )
    sys.path.insert(0, str(root))
    try:
        report: Report = run_spec(f"functions:\n{entries}\n")
        return report
    finally:
        sys.path.remove(str(root))
        for name in [name for name in sys.modules if name.startswith("tangent")]:
            del sys.modules[name]


def plain(rendered: str) -> str:
    """The text report's words, panels' borders and line breaks aside."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", rendered).split())


def test_one_config_line_declares_the_packages_convention(convention: Report) -> None:
    failed = [r for r in convention.results if r.failed]
    assert {r.target for r in failed} == {
        f"tangent.{m}:Scale{k}" for m, s in MODULES.items() for k in s
    }
    assert all(any(note.startswith(DECLARATION) for note in r.notes) for r in failed)
    said = plain(FORMATS["text"](convention, RenderOptions()))

    line = (
        "if this is the package's convention, declare it once: "
        'surrogates = ["tangent.*"] under [tool.gradverify]'
    )
    assert said.count(line) == 1
    assert re.search(r"same in 3 more Functions: tangent\.groups:Scale3", said)
    assert DECLARATION not in said  # no Function's own line in the grouped panel
    # JSON keeps each Function's own line.
    results = json.loads(FORMATS["json"](convention, RenderOptions()))["results"]
    assert sum(DECLARATION in " ".join(r["notes"]) for r in results) == len(failed)


def test_a_report_cut_short_still_gives_the_config_line_once(convention: Report) -> None:
    said = plain(FORMATS["text"](convention, RenderOptions(max_lines=12)))
    assert "left out to keep this report within 12 lines" in said
    assert said.count('declare it once: surrogates = ["tangent.*"]') == 1
    assert DECLARATION not in said


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        (["pkg.lie.so3:Exp", "pkg.lie.se3:Log", "pkg.lie.so3:Log"], ["pkg.lie.*"]),
        (["pkg.lie:Exp", "pkg.lie:Log", "pkg.lie:Act"], ["pkg.lie.*"]),
        (["src/pkg/a.py:F", "src/pkg/b.py:G", "src/pkg/b.py:H"], ["src.pkg.*"]),
        (["alpha.ops:F", "beta.ops:G", "beta.ops:H"], ["alpha.ops.*", "beta.ops.*"]),
    ],
)
def test_the_pattern_is_the_modules_the_targets_share(
    targets: list[str], expected: list[str]
) -> None:
    assert patterns(targets) == expected
