"""`--format html`: a self-contained page, one section per finding, the mismatch map as cells.

The markup is checked with a parser, and the page as a real browser draws it: headless
Chromium (Debian's `chromium` package) driven by Playwright through `executable_path`.
That test skips, saying why, where either is missing; `.ci/run` installs the browser.
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import torch

import gradverify
from gradverify.examples.activations import ClippedReLU
from gradverify.examples.buggy import ClippedReLUForgotMask
from gradverify.report import RenderOptions, html
from gradverify.results import Report, Result, Status

CLIP = 1.0
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WRONG_COLOUR = "rgb(207, 34, 46)"  # .wrong in html.CSS


def parse(page: str) -> ET.Element:
    """The page as XML: it must be well-formed (the doctype aside)."""
    assert page.startswith("<!DOCTYPE html>\n")
    return ET.fromstring(page.removeprefix("<!DOCTYPE html>\n"))


def with_class(root: ET.Element, tag: str, name: str) -> list[ET.Element]:
    return [e for e in root.iter(tag) if name in (e.get("class") or "").split()]


def text_of(element: ET.Element) -> str:
    return "".join(element.itertext())


@pytest.fixture(scope="module")
def mask_input() -> torch.Tensor:
    """A 6 x 9 argument, scrambled, away from the kinks at 0 and 1."""
    grid = torch.linspace(-1.9, 2.9, 54, dtype=torch.float64)
    grid = torch.where((grid - CLIP).abs() < 0.03, grid + 0.06, grid)
    grid = torch.where(grid.abs() < 0.03, grid + 0.06, grid)
    order = torch.randperm(54, generator=torch.Generator().manual_seed(3))
    return grid[order].reshape(6, 9)


@pytest.fixture(scope="module")
def mask_report(mask_input: torch.Tensor) -> Report:
    x = mask_input.clone().requires_grad_()
    return gradverify.verify(ClippedReLUForgotMask, [x, CLIP], checks=["finite_difference"])


def expected_wrong(x: torch.Tensor) -> set[tuple[int, int]]:
    return {(int(i), int(j)) for i, j in (x > CLIP).nonzero().tolist()}


def test_the_page_is_well_formed_and_self_contained(buggy_report: Report) -> None:
    page = html.render(buggy_report, RenderOptions())
    root = parse(page)
    assert root.tag == "html" and root.find("head/style") is not None
    # Jump links within the page (href="#…") fetch nothing.
    assert not re.search(r'<script|<link|<img|\bsrc=|\bhref="(?!#)|url\(|@import', page)


def test_one_section_per_failure_and_warning(buggy_report: Report) -> None:
    root = parse(html.render(buggy_report, RenderOptions()))
    findings = [r for r in buggy_report.results if r.status in (Status.FAIL, Status.WARN)]
    sections = with_class(root, "section", "finding")
    assert len(sections) == len(findings) > 0
    for section, result in zip(sections, findings, strict=True):
        assert result.status.value in section.get("class", "").split()
        assert text_of(section.find("p")) == result.message  # type: ignore[arg-type]


def test_the_evidence_and_the_summary_are_shown(mask_report: Report) -> None:
    root = parse(html.render(mask_report, RenderOptions()))
    (failure,) = mask_report.results
    (evidence,) = with_class(root, "dl", "evidence")
    labels = [text_of(dt) for dt in evidence.iter("dt")]
    values = dict(zip(labels, (text_of(dd) for dd in evidence.iter("dd")), strict=True))
    assert values["element"] == str(list(failure.element or ()))
    assert values["analytical"] == f"{failure.analytical:.8g}"
    assert "wrong only where x > 1" in values["likely cause"]
    assert "FAILED" in text_of(root.find("body/header"))  # type: ignore[arg-type]


def test_the_map_marks_the_wrong_cells_at_their_coordinates(
    mask_report: Report, mask_input: torch.Tensor
) -> None:
    root = parse(html.render(mask_report, RenderOptions()))
    (table,) = with_class(root, "table", "mismatch-map")
    rows = list(table.iter("tr"))[1:]  # after the column indices
    assert len(rows) == 6
    found = {
        (row_index, column)
        for row_index, row in enumerate(rows)
        for column, cell in enumerate(row.iter("td"))
        if cell.get("class") == "wrong"
    }
    assert found == expected_wrong(mask_input)
    labelled = {cell.get("data-element") for cell in with_class(table, "td", "wrong")}
    assert labelled == {f"[{i}, {j}]" for i, j in found}
    assert len(with_class(table, "td", "right")) == 54 - len(found)


def test_a_1d_map_and_unexamined_cells() -> None:
    result = Result(
        "pkg:Fn", "vector", "finite_difference", Status.FAIL, "wrong", input_index=0,
        mismatch_map=(".x x",),
    )  # fmt: skip
    root = parse(html.render(Report((result,)), RenderOptions()))
    cells = [(td.get("class"), td.get("data-element")) for td in root.iter("td")]
    assert cells == [("right", "[0]"), ("wrong", "[1]"), ("unexamined", "[2]"), ("wrong", "[3]")]
    assert "not examined" in text_of(with_class(root, "p", "legend")[0])


def test_user_text_is_escaped() -> None:
    hostile = "<script>alert('x')</script> & <b>"
    result = Result(
        f"pkg:{hostile}", hostile, "backward", Status.FAIL, hostile, hint=hostile,
        details=(hostile,), notes=(hostile,), input_index=0, input_name=hostile,
    )  # fmt: skip
    page = html.render(Report((result,), notes=(hostile,)), RenderOptions())
    root = parse(page)
    assert "<script" not in page and "<b>" not in page
    assert list(root.iter("script")) == [] and list(root.iter("b")) == []
    assert text_of(root).count(hostile) >= 6  # target, case, message, hint, details, notes


def test_passing_cases_are_a_compact_list_left_out_when_quiet(mask_report: Report) -> None:
    x = torch.tensor([-0.5, 0.5, 1.5], dtype=torch.float64, requires_grad=True)
    correct = gradverify.verify(ClippedReLU, [x, CLIP], checks=["forward", "finite_difference"])
    assert correct.passed
    report = Report(mask_report.results + correct.results)
    root = parse(html.render(report, RenderOptions()))
    (listing,) = with_class(root, "ul", "passing")
    (line,) = listing.iter("li")
    assert text_of(line).startswith(
        "gradverify.examples.activations:ClippedReLU case verify: 2 passed"
    )
    assert len(with_class(root, "section", "finding")) == 1
    quiet = parse(html.render(report, RenderOptions(quiet=True)))
    assert with_class(quiet, "ul", "passing") == []


# The page as a browser draws it.


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="module")
def browser() -> Any:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install '.[dev]')"
    )
    executable = chromium()
    if executable is None:
        pytest.skip("no chromium binary found (apt-get install chromium; .ci/run installs it)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=BROWSER_ARGS)
        yield launched
        launched.close()


DRAWN = """() => Array.from(document.querySelectorAll("table.mismatch-map td")).map(td => {
    const box = td.getBoundingClientRect();
    return {x: box.x, y: box.y, colour: getComputedStyle(td).backgroundColor};
})"""


def test_the_browser_shows_the_mask_bug_where_x_exceeds_1(
    browser: Any, mask_report: Report, mask_input: torch.Tensor, tmp_path: Path
) -> None:
    path = tmp_path / "report.html"
    path.write_text(html.render(mask_report, RenderOptions()), encoding="utf-8")
    page = browser.new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(path.as_uri())
    assert page.title() == "gradverify: FAILED"
    assert page.locator("section.finding").count() == 1
    evidence = page.locator("section.finding dl.evidence").inner_text()
    assert "wrong only where x > 1" in evidence
    assert f"{mask_report.results[0].analytical:.8g}" in evidence
    cells = page.evaluate(DRAWN)
    assert len(cells) == 54
    # Rows and columns as drawn: distinct y and x positions, in order.
    ys = sorted({round(cell["y"]) for cell in cells})
    xs = sorted({round(cell["x"]) for cell in cells})
    assert (len(ys), len(xs)) == (6, 9)
    red = {
        (ys.index(round(cell["y"])), xs.index(round(cell["x"])))
        for cell in cells
        if cell["colour"] == WRONG_COLOUR
    }
    assert red == expected_wrong(mask_input)
    assert requested == [path.as_uri()]  # nothing fetched beyond the page itself
    page.close()


WARNS_ONLY = """
target: tests.functions.report:MulWastesOnlyW
checks: [forward, layouts]
cases: [{name: pair, inputs: [{shape: [3]}, {shape: [3]}]}]
"""


def test_a_table_of_contents_jumps_to_each_case_failures_first(buggy_report, run_spec) -> None:
    # A case that only warns, first in the report; then specs/buggy.yaml's failing cases.
    report = Report(run_spec(WARNS_ONLY).results + buggy_report.results)
    root = parse(html.render(report, RenderOptions()))
    (contents,) = with_class(root, "nav", "contents")
    ids = {element.get("id") for element in root.iter() if element.get("id")}
    links = [a.get("href", "") for a in contents.iter("a")]
    assert links and all(link.startswith("#") and link[1:] in ids for link in links)
    # One line per case with findings, failures before warnings, each marked.
    worst: dict[tuple[str, str], Status] = {}
    for result in report.results:
        if result.status in (Status.FAIL, Status.WARN):
            key = (result.target, result.case)
            worst[key] = Status.FAIL if result.failed else worst.get(key, Status.WARN)
    lines = [li for li in contents.iter("li") if li.get("class")]
    assert [li.get("class") for li in lines] == sorted(
        (status.value for status in worst.values()), key=lambda value: value != "fail"
    )
    assert {"fail", "warn"} <= {li.get("class") for li in lines}
    assert all(text_of(li).startswith("✗ " if li.get("class") == "fail" else "! ") for li in lines)
    for li in lines:  # the link lands on the case it names
        (anchor,) = li.iter("a")
        (article,) = [a for a in root.iter("article") if a.get("id") == anchor.get("href")[1:]]
        target, case = [text_of(code) for code in anchor.iter("code")]
        assert [text_of(code) for code in article.find("h2").iter("code")] == [target, case]
    # Each case's heading leads back to the contents.
    for article in root.iter("article"):
        assert [a.get("href") for a in article.find("h2").iter("a")] == ["#top"]


def test_a_check_with_several_results_is_named_once_with_its_count(run_spec) -> None:
    # finite_difference passes once per argument; the case also has a finding (wasted work).
    report = run_spec(
        """
        target: tests.functions.report:MulWastesOnlyW
        checks: [forward, layouts, finite_difference]
        cases: [{name: pair, inputs: [{shape: [3]}, {shape: [3]}]}]
        """
    )
    assert report.summary.warnings == 1
    passed = [r.check for r in report.results if r.status is Status.PASS]
    assert passed == ["forward", "layouts", "finite_difference", "finite_difference"]
    root = parse(html.render(report, RenderOptions()))
    (line,) = [p for p in with_class(root, "p", "muted") if text_of(p).startswith("pass: ")]
    assert text_of(line) == "pass: forward, layouts, finite_difference ×2"
