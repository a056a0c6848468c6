"""Every place in the docs that gradverify points its users at exists: a README section, a
docs/*.md page, a heading anchor on one.

The references are read from the package's source (what its messages, spec comments and
explanations print) and from what `gradverify init` prints, so a renamed page or heading
fails here rather than in front of a user.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gradverify"
# `README 'The spec'`, `README "Quickstart"`, `README.md#quickstart`, `docs/spec.md`,
# `docs/spec.md#target-forms`, `checks.md#gradient-modes`.
REFERENCE = re.compile(
    r"""README(?:\.md)?\s*(?:'(?P<quoted>[^']+)'|"(?P<double>[^"]+)"|\#(?P<readme>[\w-]+))"""
    r"""|(?P<page>(?:docs/)?[\w-]+\.md)(?:\#(?P<anchor>[\w-]+))?"""
)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [heading.strip() for heading in re.findall(r"^#{1,6} (.+)$", text, re.M)]


def broken(text: str) -> list[str]:
    """The doc references in `text` that name no page, section or anchor that exists."""
    missing = []
    for found in REFERENCE.finditer(text):
        section = found.group("quoted") or found.group("double")
        if section is not None or found.group("readme") is not None:
            page, anchor = ROOT / "README.md", found.group("readme") or slug(section)
        else:
            name = found.group("page")
            page = ROOT / (name if name.startswith("docs/") else f"docs/{name}")
            anchor = found.group("anchor")
            if page.name == "README.md":
                page = ROOT / "README.md"
        if not page.is_file():
            missing.append(f"{found.group(0)}: no page {page.relative_to(ROOT)}")
        elif anchor is not None and anchor not in {slug(h) for h in headings(page)}:
            missing.append(f"{found.group(0)}: no heading #{anchor} in {page.name}")
    return missing


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_doc_reference_in_the_package_exists():
    missing = [
        f"{source.relative_to(ROOT)}: {problem}"
        for source in SOURCES
        for problem in broken(source.read_text(encoding="utf-8"))
    ]
    assert missing == []


def test_the_package_refers_to_its_docs():
    # The scan above finds something to check (the spec format's page, at least).
    found = [m.group(0) for s in SOURCES for m in REFERENCE.finditer(s.read_text("utf-8"))]
    assert "docs/spec.md" in found


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Every key: README 'The spec'.", "no heading #the-spec in README.md"),
        ('see README "Exit codes"', None),
        ("see README.md#quickstart", None),
        ("docs/spec.md#target-forms", None),
        ("docs/spec.md#targets", "no heading #targets in spec.md"),
        ("checks.md#gradient-modes", None),
        ("docs/tutorial.md", "no page docs/tutorial.md"),
    ],
)
def test_the_checker_tells_a_broken_reference(text: str, problem: str | None):
    found = broken(text)
    assert (found == []) if problem is None else (len(found) == 1 and problem in found[0])


def test_what_init_prints_points_at_docs_that_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["init", "tests.functions.tutorials:MyReLU", "--no-isolation"])
    assert result.exit_code == ExitCode.OK, result.output
    assert "docs/spec.md" in result.stdout  # the starter spec says where its keys are
    assert broken(result.stdout) == []
    assert broken(Path("specs/my_relu.yaml").read_text(encoding="utf-8")) == []
