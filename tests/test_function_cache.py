"""Function-level cache keys through the real CLI: a change reruns the cases of the
Functions that can run the changed code, and only those.

One module of several Functions: two call a helper of the module, one calls a helper of
another module, one reads a module constant. The test fills the cache, edits the code, and
runs `check` again. The runs are isolated (the default), so every case runs in a worker freshly
forked from the fork server, which imports torch and gradverify but never the project: the
edited code is what each run imports, as in a new process. The command itself runs in this
process (CliRunner), so the runs share this process's one fork server rather than each
importing torch again; the cache, the key and the selection are the command's own."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.spec.function_source import function_source

OPS = '''\
"""Several Functions in one file."""

import torch

from fcpkg.helpers import square

SCALE = 3.0


def twice(x):
    return x * 2


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return twice(x)

    @staticmethod
    def backward(ctx, grad_output):
        return twice(grad_output)


class Quadruple(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return twice(twice(x))

    @staticmethod
    def backward(ctx, grad_output):
        return twice(twice(grad_output))


class Triple(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3


class Scaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * SCALE

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * SCALE


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return square(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x
'''
HELPERS = "def square(x):\n    return x * x\n"
FUNCTIONS = ("Double", "Quadruple", "Triple", "Scaled", "Square")


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "fcpkg").mkdir()
    (tmp_path / "fcpkg" / "__init__.py").write_text("")
    (tmp_path / "fcpkg" / "ops.py").write_text(OPS)
    (tmp_path / "fcpkg" / "helpers.py").write_text(HELPERS)
    functions = "\n".join(
        f"  - target: fcpkg.ops:{name}\n    checks: [forward, backward, finite_difference]\n"
        "    cases: [{name: c, inputs: [{shape: [3]}]}]"
        for name in FUNCTIONS
    )
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "ops.yaml").write_text(f"functions:\n{functions}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rerun(project: Path) -> set[str]:
    """The Functions whose cases ran (were not answered from the cache)."""
    assert "fcpkg" not in sys.modules  # only the workers import the project, afresh each run
    done = CliRunner().invoke(app, ["check", "specs", "--format", "json"])
    assert done.exit_code == 0, done.output
    results = json.loads(done.stdout)["results"]
    assert results
    return {r["target"].split(":")[1] for r in results if not r.get("cached")}


def edit(project: Path, file: str, old: str, new: str) -> None:
    path = project / "fcpkg" / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


# Each edit, then the Functions whose cases run again. One after another on one cache: the
# steps leave the cache as the next expects.
EDITS = [
    # One Function changed: only its cases run again.
    ("ops.py", "return grad_output * 3", "return 3 * grad_output", {"Triple"}),
    # A helper of the module that two Functions call: both.
    ("ops.py", "return x * 2", "return x + x", {"Double", "Quadruple"}),
    # A helper in another module of the project.
    ("helpers.py", "return x * x", "return x**2", {"Square"}),
    # A module constant one Function reads.
    ("ops.py", "SCALE = 3.0", "SCALE = 3.5", {"Scaled"}),
    # A comment inside a Function: its text changed, so it runs (cheap, and sure).
    ("ops.py", "return x * 3", "return x * 3  # three", {"Triple"}),
    # A comment or blank lines outside every Function: nothing it runs changed.
    ("ops.py", "class Triple", "# the next one\n\n\nclass Triple", set()),
    # A new import of a project module: importing it runs its code, so every Function.
    ("ops.py", "SCALE = 3.5", "import fcpkg.extra\n\nSCALE = 3.5", set(FUNCTIONS)),
]


def test_a_change_reruns_the_functions_that_run_it_and_only_those(project, monkeypatch):
    monkeypatch.syspath_prepend(str(project))  # as PYTHONPATH: the workers' path is this one
    (project / "fcpkg" / "extra.py").write_text("import torch\n\ntorch.set_printoptions(3)\n")
    assert rerun(project) == set(FUNCTIONS)
    for file, old, new, expected in EDITS:
        edit(project, file, old, new)
        assert rerun(project) == expected, (file, old, new)


def source(target: str, project: Path) -> tuple[str, ...] | None:
    found = function_source([target], project)
    return None if found is None else found.texts


@pytest.mark.parametrize(
    "code",
    [
        "from fcpkg.helpers import *\n",
        "def late(x):\n    return globals()['twice'](x)\n",
        "def late(x):\n    return torch.ops.fc.mul3(x)\n",
    ],
    ids=["star-import", "globals", "op-by-name"],
)
def test_what_cannot_be_followed_keys_whole_files(project, code):
    ops = project / "fcpkg" / "ops.py"
    ops.write_text(OPS + "\n" + code + "\n\nDouble.late = late\n")
    assert source("fcpkg.ops:Double", project) is None
    assert source("fcpkg.ops:Triple", project) is not None or "*" in code


def test_a_module_used_as_a_value_is_keyed_whole(project):
    code = "import fcpkg.helpers as h\n\n\ndef late(x):\n    return getattr(h, 'square')(x)\n"
    (project / "fcpkg" / "ops.py").write_text(OPS + "\n" + code + "\n\nDouble.late = late\n")
    (project / "fcpkg" / "helpers.py").write_text(HELPERS + "\n\ndef cube(x):\n    return x**3\n")
    texts = "\n".join(source("fcpkg.ops:Double", project) or ())
    assert "Double.late = late" in texts  # an attribute set on it, on import
    assert "def cube" in texts and "def square" in texts
    assert "class Triple" not in texts


def test_an_op_and_what_registers_on_it(project):
    (project / "fcpkg" / "ops2.py").write_text(
        textwrap.dedent(
            """\
            import torch


            @torch.library.custom_op("fc::mul3", mutates_args=())
            def mul3(x: torch.Tensor) -> torch.Tensor:
                return x * 3


            @torch.library.custom_op("fc::mul5", mutates_args=())
            def mul5(x: torch.Tensor) -> torch.Tensor:
                return x * 5


            def backward3(ctx, grad):
                return grad * 3


            def backward5(ctx, grad):
                return grad * 5


            mul3.register_autograd(backward3)
            mul5.register_autograd(backward5)


            @mul3.register_fake
            def _(x):
                return torch.empty_like(x)
            """
        )
    )
    texts = "\n".join(source("fcpkg.ops2:mul3", project) or ())
    assert "def backward3" in texts and "register_fake" in texts and "return x * 3" in texts
    assert "backward5" not in texts and "x * 5" not in texts
