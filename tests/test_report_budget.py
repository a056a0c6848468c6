"""A package report fits a screen: one panel per finding, grouped, folded, cut to 300 lines.

A package of many real Functions with wrong backwards is written to a temporary directory,
each checked on several cases: a third lose a factor 2 (one finding, the same likely cause in
every Function), a third flip the sign, a third add a term of their own (a finding per
Function, no likely cause shared). Its text report keeps within its budget, shows each
finding once with the other cases and Functions where it recurs, and `-v` shows it all.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gradverify.report import FORMATS, RenderOptions
from gradverify.results import Report, Status

FUNCTIONS = 36
CASES = ("vector", "matrix", "cube", "long")
SHAPES = ("[4]", "[3, 5]", "[2, 3, 4]", "[9]")

_FUNCTION = '''
class F{k}(Function):
    """y = {scale} * x * x + {k} * x, written for torch.func."""

    @staticmethod
    def forward(x):
        return {scale} * x * x + {k} * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ({wrong})
'''


def _wrong(k: int, scale: int) -> str:
    """The wrong derivative of Function k: a lost factor 2, a flipped sign, or a term too many."""
    if k % 3 == 0:
        return f"({2 * scale} * x + {k}) / 2"
    if k % 3 == 1:
        return f"-(2 * {scale} * x + {k})"
    return f"2 * {scale} * x + {k} + {k + 1} * x * x"


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("budget")
    code = root / "many_wrong"
    code.mkdir()
    (code / "__init__.py").write_text('"""Functions with wrong backwards."""\n')
    body = ["import torch", "from torch.autograd import Function", ""]
    for k in range(FUNCTIONS):
        scale = k + 2
        body.append(_FUNCTION.format(k=k, scale=scale, wrong=_wrong(k, scale)))
    (code / "ops.py").write_text("\n".join(body))
    cases = "\n".join(
        f"      - {{name: {name}, inputs: [{{shape: {shape}}}]}}"
        for name, shape in zip(CASES, SHAPES, strict=True)
    )
    entries = "\n".join(
        f"  - target: many_wrong.ops:F{k}\n    checks: [finite_difference, gradcheck, func]\n"
        f"    cases:\n{cases}"
        for k in range(FUNCTIONS)
    )
    (root / "many_wrong.yaml").write_text(f"functions:\n{entries}\n")
    return root


def run_in(package: Path, run_spec: Any, spec: Path | str) -> Report:
    """`spec` run with the generated package importable."""
    sys.path.insert(0, str(package))
    try:
        report: Report = run_spec(spec)
        return report
    finally:
        sys.path.remove(str(package))
        for name in [name for name in sys.modules if name.startswith("many_wrong")]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def report(package: Path, run_spec: Any) -> Report:
    return run_in(package, run_spec, package / "many_wrong.yaml")


@pytest.fixture(scope="module")
def text(report: Report) -> str:
    return FORMATS["text"](report, RenderOptions())


def status_lines(rendered: str) -> dict[str, str]:
    """Each Function's first line: its name -> the line."""
    found: dict[str, str] = {}
    for line in rendered.splitlines():
        named = re.match(r"^[✓✗!-] (many_wrong\.ops:F\d+)  ", line)
        if named and named.group(1) not in found:
            found[named.group(1)] = line
    return found


def test_every_function_fails_on_every_case_and_json_keeps_every_result(report: Report) -> None:
    failing = {(r.target, r.case) for r in report.results if r.failed}
    assert len(failing) == FUNCTIONS * len(CASES)
    assert sum(1 for r in report.results if r.check == "func" and r.failed) >= FUNCTIONS
    assert (
        len(report.results) == len(FORMATS["json"](report, RenderOptions()).split('"target"')) - 1
    )


def test_the_report_fits_300_lines_and_every_function_keeps_its_line(text: str) -> None:
    lines = text.splitlines()
    assert len(lines) <= 300
    assert len(status_lines(text)) == FUNCTIONS
    assert all(line.startswith("✗") for line in status_lines(text).values())
    assert lines[-1].startswith("FAILED") or lines[-2].startswith("FAILED")  # the summary, last
    # A Function cut short still says each finding in a line (or points at its panel).
    starts = [lines.index(line) for line in status_lines(text).values()]
    for start, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        under = lines[start + 1 : end]
        assert any(line.startswith(("  ✗ finite_difference · ", "╭─")) for line in under), under
    said = " ".join(" ".join(lines[-5:]).split())
    assert re.search(
        r"\.\.\. the panels of \d+ findings of \d+ Functions \(one line each above\) left out", said
    )
    assert "run with -v to see them all" in said


def test_each_finding_is_one_panel_that_names_its_other_cases(text: str, report: Report) -> None:
    titles = [line for line in text.splitlines() if line.startswith("╭─")]
    assert titles and all("gradcheck" not in t and "func" not in t for t in titles)
    # One panel per Function at most (each has one finding, in every case)...
    shown = [target for target in status_lines(text) if f"{target}  case " in text]
    assert len(titles) <= len(shown)
    # ...naming the three other cases where it recurs.
    assert len(re.findall(r"also in +3 more cases: matrix, cube, long", text)) == len(titles)


def test_the_same_finding_across_functions_is_shown_once(text: str) -> None:
    halved = [f"many_wrong.ops:F{k}" for k in range(0, FUNCTIONS, 3)]
    # The first Function with the lost factor 2 shows it, naming the others...
    assert text.count("off by a constant factor 1/2") == 1
    others = f"{len(halved) - 1} more Functions in many_wrong.ops: F3, F6, F9, F12, F15 and 6 more"
    assert re.search(rf"same in +{others}", text)
    # ...and each of the others points at it in one line under its status line.
    for target in halved[1:]:
        assert f": as in {halved[0]}" in text or status_lines(text)[target]


def test_funcs_repeat_is_folded_and_not_counted_as_another_failure(
    text: str, report: Report
) -> None:
    funcs = [r for r in report.results if r.check == "func" and r.failed]
    assert funcs and all(r.same_as == "finite_difference" for r in funcs)
    summary = " ".join(text.splitlines()[-2:])
    distinct = sum(1 for r in report.results if r.failed and r.same_as is None)
    repeated = report.summary.failed - distinct
    assert f"{distinct} failed (+{repeated} repeats)" in summary
    assert repeated >= len(funcs)


def test_func_folds_under_gradcheck_where_finite_difference_did_not_run(
    package: Path, run_spec: Any
) -> None:
    spec = """
        target: many_wrong.ops:F2
        checks: [gradcheck, func]
        cases: [{name: vector, inputs: [{shape: [4]}]}]
    """
    ran = run_in(package, run_spec, spec)
    (gradcheck,) = [r for r in ran.results if r.check == "gradcheck" and r.failed]
    funcs = [r for r in ran.results if r.check == "func" and r.failed]
    assert funcs and all(r.same_as == "gradcheck" for r in funcs)
    assert gradcheck.same_as is None
    rendered = FORMATS["text"](ran, RenderOptions())
    assert "func: the same finding as gradcheck" in rendered
    assert "1 failed (+1 repeats)" in " ".join(rendered.split())


def test_verbose_shows_everything(report: Report, text: str) -> None:
    verbose = FORMATS["text"](report, RenderOptions(verbose=True))
    assert len(verbose.splitlines()) > 3 * len(text.splitlines())
    assert "run with -v" not in verbose
    assert verbose.count("╭─ ✗ finite_difference") == FUNCTIONS * len(CASES)
    assert verbose.count("off by a constant factor 1/2") == len(range(0, FUNCTIONS, 3)) * 4


def test_a_report_within_its_budget_is_not_cut(report: Report) -> None:
    few = Report(tuple(r for r in report.results if r.target == "many_wrong.ops:F2"))
    rendered = FORMATS["text"](few, RenderOptions())
    assert "run with -v" not in rendered
    assert rendered.count("╭─ ✗ finite_difference") == 1  # the three other cases repeat it
    assert re.search(r"also in +3 more cases: matrix, cube, long", rendered)


def test_a_small_budget_still_keeps_every_status_line_and_the_summary(report: Report) -> None:
    rendered = FORMATS["text"](report, RenderOptions(max_lines=60))
    lines = rendered.splitlines()
    assert len(status_lines(rendered)) == FUNCTIONS
    assert len(lines) <= max(60, FUNCTIONS + 4)
    assert "FAILED" in " ".join(lines[-2:])


LONG_SKIP = textwrap.dedent(
    """\
    Could not run 'aten::empty.memory_format' with arguments from the 'CUDA' backend. This \
could be because the operator doesn't exist for this backend.
    CPU: registered at aten/src/ATen/RegisterCPU.cpp:1
    Meta: registered at aten/src/ATen/RegisterMeta.cpp:1
    """
)


def test_a_skip_says_its_reason_in_one_line() -> None:
    from gradverify.report.reasons import one_line
    from gradverify.results import Result

    needs = f"needs CUDA (this machine has none): {LONG_SKIP}"
    assert one_line(needs) == "needs CUDA (this machine has none)"
    assert one_line(LONG_SKIP) == (
        "Could not run 'aten::empty.memory_format' with arguments from the 'CUDA' backend."
    )
    results = (
        Result("m:F", "c", "forward", Status.FAIL, "forward returned NaN"),
        Result("m:F", "c", "finite_difference", Status.SKIP, LONG_SKIP),
    )
    rendered = FORMATS["text"](Report(results), RenderOptions())
    assert "RegisterCPU" not in rendered and "This could be because" not in rendered
    assert "finite_difference skipped: Could not run 'aten::empty.memory_format'" in rendered


def test_an_unchecked_functions_reason_is_one_line() -> None:
    from gradverify.results import Coverage, Result, Uncovered

    needs = Uncovered("m:OnGpu", f"needs CUDA (this machine has none): {LONG_SKIP}")
    coverage = Coverage(with_specs=(), inferred=("m:F",), without_inputs=(needs,))
    report = Report((Result("m:F", "c", "forward", Status.PASS),), coverage=coverage)
    lines = FORMATS["text"](report, RenderOptions()).splitlines()
    at = lines.index("    m:OnGpu")
    assert lines[at + 1] == "      needs CUDA (this machine has none)"
    assert lines[at + 2].startswith("PASSED")
