"""Every `gradverify` command shown in README.md and docs/*.md runs, with the exit code the docs
imply.

A command is a line starting with `gradverify ` (or `$ gradverify ` in a console block) in a
```sh, ```bash, ```shell or ```console block; a line ending in `\\` continues on the next. A
block that cannot run in a test is marked on the line before its fence, with the reason:

    <!-- not-run: needs a GPU -->

Its commands are reported as skipped with that reason (`pytest -rs`), never left out silently.

Each command runs in-process (CliRunner, `--no-isolation` added to `check` and `init` unless it
chooses isolation itself) in a fresh copy of a small project that makes the docs' placeholders
real: `mypkg.ops:ClippedReLU` and `mypkg.ops:Fn` (correct), `path/to/ops.py:Outer.Inner`,
`specs/ops.yaml` for ClippedReLU, `other.yml`, `cases.yaml` (no `target:`), and
`specs/buggy.yaml`, one seeded bug (the bundled ClippedReLUForgotMask). The exit code the docs
imply: a `check` that runs specs/buggy.yaml (its spec paths, the default `specs/`, or
`--all-files`) finds the bug and exits 1; every other command exits 0.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^\s*```(\S*)\s*$")
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class DocCommand:
    page: str  # relative to the repository root
    line: int
    words: tuple[str, ...]
    not_run: str | None  # the reason given in the page, if it is marked not to run

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def shell_blocks(text: str) -> list[tuple[int, list[str], str | None]]:
    """(line of the first command line, the block's lines, its not-run reason) per shell block."""
    lines = text.splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = next((i for i in range(index + 1, len(lines)) if FENCE.match(lines[i])), len(lines))
        if opening.group(1) in SHELLS:
            before = [line for line in lines[:index] if line.strip()]
            marker = NOT_RUN.match(before[-1]) if before else None
            blocks.append((index + 2, lines[index + 1 : end], marker and marker.group(1)))
        index = end + 1
    return blocks


def doc_commands(page: Path) -> list[DocCommand]:
    name = page.relative_to(ROOT).as_posix()
    commands = []
    for first_line, block, not_run in shell_blocks(page.read_text(encoding="utf-8")):
        pending, start = "", 0
        for offset, raw in enumerate(block):
            if not pending:
                start = offset
            line = (pending + " " + raw.strip()) if pending else raw.strip()
            if line.endswith("\\"):
                pending = line[:-1].strip()
                continue
            pending = ""
            line = line.removeprefix("$ ")
            if line.startswith("gradverify "):
                words = tuple(shlex.split(line, comments=True))
                commands.append(DocCommand(name, first_line + start, words, not_run))
    return commands


COMMANDS = [command for page in PAGES for command in doc_commands(page)]

# --- the project the docs talk about ---------------------------------------------------------

OPS = """\
import torch


class ClippedReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, clip=6.0):
        ctx.save_for_backward(x)
        ctx.clip = clip
        return x.clamp(0.0, clip)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * ((x > 0) & (x < ctx.clip)).to(grad_output.dtype), None


class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output
"""

NESTED = """\
import torch


class Outer:
    class Inner(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * x.exp()
"""

FILES = {
    "mypkg/__init__.py": "",
    "mypkg/ops.py": OPS,
    "path/to/ops.py": NESTED,
    "specs/ops.yaml": """\
        target: mypkg.ops:ClippedReLU
        cases:
          - name: vector
            inputs: [{shape: [8], low: -2.0, high: 8.0}]
        """,
    "specs/buggy.yaml": """\
        target: gradverify.examples.buggy:ClippedReLUForgotMask
        cases:
          - name: vector
            inputs: [{values: [-1.5, -0.5, 0.3, 0.9, 1.4, 2.5]}, 1.0]
        """,
    "other.yml": """\
        target: mypkg.ops:Fn
        cases: [{name: matrix, inputs: [{shape: [2, 3]}]}]
        """,
    "cases.yaml": """\
        cases: [{name: vector, inputs: [{shape: [5]}]}]
        """,
}
# The paths that run the seeded bug of specs/buggy.yaml.
BUGGY = {"specs", "specs/", "specs/buggy.yaml"}
# Options of `check` that take a value (the value is not a path to check).
VALUED = {"--spec", "--seed", "--format", "--output", "-o", "--mode", "--timeout", "-j", "--jobs"}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("docs-project")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


@pytest.fixture
def project(template, tmp_path, monkeypatch) -> Path:
    root = tmp_path / "project"
    shutil.copytree(template, root)
    monkeypatch.chdir(root)
    # An earlier test's mypkg (test_authoring's, with another ClippedReLU) may still be
    # imported: this project's is imported anew.
    for name in [m for m in sys.modules if m == "mypkg" or m.startswith("mypkg.")]:
        del sys.modules[name]
    before = set(sys.modules)
    yield root
    # The project's modules (mypkg, path/to/ops.py) are imported anew by the next command.
    for name in set(sys.modules) - before:
        if str(root) in str(getattr(sys.modules[name], "__file__", "") or ""):
            del sys.modules[name]
    for name in [m for m in sys.modules if m == "mypkg" or m.startswith("mypkg.")]:
        del sys.modules[name]


def expected_exit(words: tuple[str, ...]) -> int:
    if words[1] != "check":
        return ExitCode.OK
    arguments = list(words[2:])
    paths = [
        word
        for position, word in enumerate(arguments)
        if not word.startswith("-") and (position == 0 or arguments[position - 1] not in VALUED)
    ]
    runs_the_bug = not paths or "--all-files" in arguments or bool(BUGGY & set(paths))
    return ExitCode.FAILED if runs_the_bug else ExitCode.OK


def runnable(words: tuple[str, ...]) -> tuple[list[str], str | None]:
    """The CLI arguments, fast where the command allows it, and the file `>` writes to."""
    arguments, target = list(words[1:]), None
    if ">" in arguments:
        arguments, target = arguments[: arguments.index(">")], arguments[-1]
    chooses = any(word in ("--isolation", "--no-isolation") for word in arguments)
    if arguments[0] in ("check", "init") and not chooses:
        arguments.append("--no-isolation")
    return arguments, target


@pytest.mark.parametrize("command", COMMANDS, ids=[command.id for command in COMMANDS])
def test_the_command_runs(command: DocCommand, project: Path):
    if command.not_run is not None:
        pytest.skip(f"not run ({command.page} says: {command.not_run})")
    arguments, target = runnable(command.words)
    result = CliRunner().invoke(app, arguments)
    shown = " ".join(command.words)
    assert result.exit_code == expected_exit(command.words), (
        f"{command.id}: `{shown}` exited {result.exit_code}\n{result.output}"
    )
    if target is not None:
        assert result.stdout, f"{command.id}: `{shown}` wrote nothing to {target}"


# --- the harness itself ---------------------------------------------------------------------


def test_commands_are_found_on_the_pages_that_show_them():
    pages = {command.page for command in COMMANDS}
    assert {"README.md", "docs/authoring.md", "docs/formats.md", "docs/speed.md"} <= pages
    assert all(command.words[0] == "gradverify" for command in COMMANDS)


def test_every_not_run_marker_has_a_reason_and_a_block():
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if not (line.lstrip().startswith("<!--") and "not-run" in line):
                continue
            marker = NOT_RUN.match(line)
            assert marker and marker.group(1), f"{page.name}:{number}: `<!-- not-run: reason -->`"
            following = next((later for later in lines[number:] if later.strip()), "")
            opening = FENCE.match(following)
            assert opening and opening.group(1) in SHELLS, (
                f"{page.name}:{number}: a not-run marker goes right before a shell block"
            )


MARKDOWN = """\
Text.

```sh
gradverify check specs/   # a comment
make demo
gradverify check a.yaml \\
    --seed 3
```

<!-- not-run: needs a GPU -->

```console
$ gradverify check gpu.yaml
```

```yaml
run: gradverify check never.yaml
```
"""


def test_the_harness_reads_commands_continuations_and_markers(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(MARKDOWN, encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = [(c.line, c.words, c.not_run) for c in doc_commands(page)]
    assert found == [
        (4, ("gradverify", "check", "specs/"), None),
        (6, ("gradverify", "check", "a.yaml", "--seed", "3"), None),
        (13, ("gradverify", "check", "gpu.yaml"), "needs a GPU"),
    ]


@pytest.mark.parametrize(
    ("shown", "code"),
    [
        ("gradverify check", ExitCode.FAILED),
        ("gradverify check specs/ -q", ExitCode.FAILED),
        ("gradverify check --all-files", ExitCode.FAILED),
        ("gradverify check specs/ops.yaml other.yml", ExitCode.OK),
        ("gradverify check mypkg.ops:Fn --spec cases.yaml", ExitCode.OK),
        ("gradverify check specs/ops.yaml --output specs/", ExitCode.OK),
        ("gradverify explain kinks", ExitCode.OK),
    ],
)
def test_the_exit_code_the_docs_imply(shown, code):
    assert expected_exit(tuple(shlex.split(shown))) == code


# --- snippets shown twice -------------------------------------------------------------------


def yaml_after(page: Path, heading: str) -> str:
    text = page.read_text(encoding="utf-8")
    found = re.search(r"```yaml\n(.*?)```", text[text.index(heading) :], re.DOTALL)
    assert found, f"no yaml block after {heading!r} in {page.name}"
    return textwrap.dedent(found.group(1))


def test_the_readme_pre_commit_snippet_is_the_one_the_docs_test():
    # tests/test_precommit.py runs the docs' snippet; the README's brief copy must not drift.
    readme = yaml_after(ROOT / "README.md", "**pre-commit**")
    docs = yaml_after(ROOT / "docs" / "integrations.md", "\n## pre-commit\n")
    assert readme == docs


# --- the references are complete ------------------------------------------------------------


def page_text(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def test_every_check_has_a_row_in_docs_checks():
    from gradverify.spec.models import CHECK_IDS

    rows = re.findall(r"^\| `(\w+)` \|", page_text("checks.md"), re.M)
    missing = [check for check in CHECK_IDS if check not in rows]
    assert not missing, f"docs/checks.md: add a row to the check table for {missing}"


def test_every_lint_rule_has_a_row_in_docs_checks():
    from gradverify.catalogue import LINT_RULES as RULES

    text = page_text("checks.md")
    table = text[text.index("\n## Lint rules\n") :]
    rows = re.findall(r"^\| `(GV\d{3})` \|", table, re.M)
    assert rows == list(RULES), "docs/checks.md: the lint rule table lists every rule, in order"


def test_every_output_format_is_described_in_docs_formats():
    from gradverify.cli import OutputFormat

    text = page_text("formats.md")
    missing = [f.value for f in OutputFormat if f"- **{f.value}**" not in text]
    assert not missing, f"docs/formats.md: describe --format {missing} (a `- **name**` item)"


def test_every_spec_key_is_in_docs_spec():
    from gradverify.spec import models

    owners = [
        models.FunctionSpec,
        models.MultiSpec,
        models.Case,
        models.TensorInput,
        models.LiteralInput,
        models.Tolerance,
        models.LowPrecision,
        models.Variants,
    ]
    text = page_text("spec.md")
    missing = [
        f"{owner.__name__}.{key}"
        for owner in owners
        for key in owner.model_fields
        if f"`{key}" not in text and f"{key}:" not in text
    ]
    assert not missing, f"docs/spec.md: document the spec keys {missing}"
