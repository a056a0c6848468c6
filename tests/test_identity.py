"""One target, however it is spelled: a module path, a file path (relative or absolute), a
re-export, the op object, `module:ns::name` and `op:ns::name` find one spec, share one cache
entry, are named one way in the report, and stop `init` from writing a duplicate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from gradverify.spec.identity import TargetIdentity, canonical, identify, module_file_in

# Imported (its ops registered) once per process, from the module's one project; a fixed name
# keeps test ids alike in every pytest-xdist worker.
PACKAGE = "gvidentity"

OPS = f"""\
import math

import torch


class GeluTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        c = math.sqrt(2 / math.pi)
        t = torch.tanh(c * (x + 0.044715 * x**3))
        return grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x))


@torch.library.custom_op("{PACKAGE}::cube", mutates_args=())
def cube(x: torch.Tensor) -> torch.Tensor:
    return x * x * x


@cube.register_fake
def _(x):
    return torch.empty_like(x)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * 3 * x * x


cube.register_autograd(_backward, setup_context=_setup)
cube_alias = torch.ops.{PACKAGE}.cube
"""

# An op whose name is computed when the module runs: reading the source cannot tell.
COMPUTED = f"""\
import torch

NAMESPACE = "{PACKAGE}"


@torch.library.custom_op(NAMESPACE + "::square", mutates_args=())
def square(x: torch.Tensor) -> torch.Tensor:
    return x * x


square.register_autograd(
    lambda ctx, grad: grad * 2 * ctx.x, setup_context=lambda ctx, inputs, out: setattr(ctx, "x", inputs[0])
)
"""


def spec(target: str, case: str = "small") -> str:
    return f"target: {target}\ncases:\n  - name: {case}\n    inputs:\n      - {{shape: [3], dtype: float64}}\n"


GELU_SPELLINGS = [
    f"{PACKAGE}.ops:GeluTanh",
    f"{PACKAGE}/ops.py:GeluTanh",
    "{root}/" + f"{PACKAGE}/ops.py:GeluTanh",  # absolute
    f"{PACKAGE}:GeluTanh",  # the package's re-export
]
CUBE_SPELLINGS = [
    f"{PACKAGE}.ops:cube",  # the op object
    f"{PACKAGE}.ops:cube_alias",  # torch.ops.ns.cube, assigned
    f"{PACKAGE}/ops.py:cube",
    f"{PACKAGE}.ops:{PACKAGE}::cube",
    f"{PACKAGE}:{PACKAGE}::cube",  # importing the package registers it
    f"op:{PACKAGE}::cube",
    f"op:{PACKAGE}::cube.default",
]


@pytest.fixture(scope="module")
def package_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project: the package (Functions and ops) and no spec yet."""
    root = tmp_path_factory.mktemp("project")
    package = root / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("from .ops import GeluTanh\n", encoding="utf-8")
    (package / "ops.py").write_text(OPS, encoding="utf-8")
    (package / "computed.py").write_text(COMPUTED, encoding="utf-8")
    return root


@pytest.fixture
def project(package_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The project as the cwd, with specs for GeluTanh and cube under `specs/` (each spelled
    one way), and no cache."""
    monkeypatch.chdir(package_root)
    specs = package_root / "specs"
    specs.mkdir()
    (specs / "gelu_tanh.yaml").write_text(spec(f"{PACKAGE}.ops:GeluTanh"), encoding="utf-8")
    (specs / "my_cube.yaml").write_text(spec(f"{PACKAGE}.ops:cube"), encoding="utf-8")
    yield package_root
    for leftover in ("specs", ".gradverify_cache"):
        for file in sorted((package_root / leftover).rglob("*"), reverse=True):
            file.rmdir() if file.is_dir() else file.unlink()
        if (package_root / leftover).exists():
            (package_root / leftover).rmdir()


def spelled(spelling: str, root: Path) -> str:
    return spelling.format(root=root)


def check(*arguments: str) -> tuple[int, dict, str]:
    """`check ... --format json` in process: exit code, the JSON report and stderr."""
    result = CliRunner().invoke(app, ["check", *arguments, "--no-isolation", "--format", "json"])
    report = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.exit_code, report, result.stderr


# --- reading source -------------------------------------------------------------------


@pytest.mark.parametrize("spelling", GELU_SPELLINGS)
def test_every_spelling_of_a_function_is_one_identity(project: Path, spelling: str) -> None:
    identity = identify(spelled(spelling, project))
    assert identity == TargetIdentity(f"{PACKAGE}.ops:GeluTanh")
    assert str(identity) == f"{PACKAGE}.ops:GeluTanh"
    assert canonical(spelled(spelling, project)) == f"{PACKAGE}.ops:GeluTanh"


@pytest.mark.parametrize("spelling", CUBE_SPELLINGS)
def test_every_spelling_of_an_op_is_one_identity(project: Path, spelling: str) -> None:
    identity = identify(spelling)
    assert identity is not None and identity.is_op
    assert identity == TargetIdentity(f"{PACKAGE}::cube")
    assert hash(identity) == hash(TargetIdentity(f"{PACKAGE}::cube", "elsewhere"))


def test_an_op_object_is_spelled_after_the_module_that_defines_it(project: Path) -> None:
    assert canonical(f"{PACKAGE}.ops:cube") == f"{PACKAGE}.ops:{PACKAGE}::cube"
    assert canonical(f"op:{PACKAGE}::cube.default") == f"op:{PACKAGE}::cube"


def test_different_targets_stay_different(project: Path) -> None:
    names = [f"{PACKAGE}.ops:GeluTanh", f"{PACKAGE}.ops:cube", f"{PACKAGE}.computed:square"]
    assert len({identify(name) for name in names}) == 3
    # An attribute of the op object is not the op.
    assert identify(f"{PACKAGE}.ops:cube.register_fake") != identify(f"{PACKAGE}.ops:cube")
    # A name computed at run time cannot be read: the attribute keeps its own identity.
    assert identify(f"{PACKAGE}.computed:square") == TargetIdentity(f"{PACKAGE}.computed:square")


def test_identity_reads_source_and_never_imports(tmp_path: Path) -> None:
    (tmp_path / "explosive.py").write_text(
        'raise SystemExit("imported")\n@custom_op("boom::op")\ndef op(x): ...\n',
        encoding="utf-8",
    )
    assert identify("explosive:op", tmp_path) == TargetIdentity("boom::op")
    assert "explosive" not in sys.modules


# --- check ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "name"),
    [(s, f"{PACKAGE}.ops:GeluTanh") for s in GELU_SPELLINGS]
    + [(s, f"{PACKAGE}.ops:cube") for s in CUBE_SPELLINGS],
)
def test_check_of_any_spelling_runs_the_spec_that_names_it(
    project: Path, spelling: str, name: str
) -> None:
    code, report, stderr = check(spelled(spelling, project), "--no-cache")
    assert code == ExitCode.OK, stderr
    # The spec's case, under the spec's name: not a zero-config run of "inferred".
    assert {(r["target"], r["case"]) for r in report["results"]} == {(name, "small")}
    assert not any("no spec names" in note for note in report["notes"])


def test_check_finds_the_spec_in_the_configured_spec_paths(project: Path) -> None:
    (project / "specs").rename(project / "gradients")
    (project / "pyproject.toml").write_text('[tool.gradverify]\nspecs = ["gradients"]\n')
    try:
        code, report, _ = check(f"{PACKAGE}/ops.py:GeluTanh", "--no-cache")
    finally:
        (project / "pyproject.toml").unlink()
        (project / "gradients").rename(project / "specs")
    assert code == ExitCode.OK
    assert {r["case"] for r in report["results"]} == {"small"}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (f"{PACKAGE}.ops:GeluTanh", f"{PACKAGE}/ops.py:GeluTanh"),
        (f"op:{PACKAGE}::cube", f"{PACKAGE}.ops:cube"),
    ],
)
def test_a_second_spelling_is_answered_from_the_cache(
    project: Path, first: str, second: str
) -> None:
    check(first)
    code, report, _ = check(second)
    assert code == ExitCode.OK
    assert report["results"] and all(r["cached"] for r in report["results"])


@pytest.mark.parametrize(
    ("spellings", "name"),
    [
        ((f"{PACKAGE}/ops.py:GeluTanh", f"{PACKAGE}:GeluTanh"), f"{PACKAGE}.ops:GeluTanh"),
        (
            (f"{PACKAGE}.ops:cube", f"{PACKAGE}.ops:{PACKAGE}::cube"),
            f"{PACKAGE}.ops:{PACKAGE}::cube",
        ),
    ],
)
def test_zero_config_names_and_caches_the_canonical_spelling(
    project: Path, spellings: tuple[str, str], name: str
) -> None:
    for file in (project / "specs").iterdir():
        file.unlink()
    code, first, _ = check(spellings[0])
    assert code == ExitCode.OK
    assert {r["target"] for r in first["results"]} == {name}
    assert any(f"no spec names {name};" in note for note in first["notes"])
    code, second, _ = check(spellings[1])
    assert {r["target"] for r in second["results"]} == {name}
    assert all(r["cached"] for r in second["results"])


def test_the_real_cli_finds_the_spec_of_a_file_path(project: Path) -> None:
    executable = Path(sys.executable).with_name("gradverify")
    completed = subprocess.run(
        [str(executable), "check", f"{PACKAGE}/ops.py:GeluTanh", "--no-cache"],
        capture_output=True, text=True, check=False, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert completed.returncode == ExitCode.OK, completed.stderr
    assert f"✓ {PACKAGE}.ops:GeluTanh  case small" in completed.stdout
    assert "no spec names" not in completed.stdout


# --- init -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "existing"),
    [(s, "specs/gelu_tanh.yaml") for s in GELU_SPELLINGS]
    + [(s, "specs/my_cube.yaml") for s in CUBE_SPELLINGS],
)
def test_init_points_at_the_spec_that_already_names_the_target(
    project: Path, spelling: str, existing: str
) -> None:
    result = CliRunner().invoke(
        app, ["init", spelled(spelling, project), "-o", "specs/new.yaml", "--no-isolation"]
    )
    assert result.exit_code == ExitCode.USAGE
    assert f"{existing}:1 already has a spec for" in result.stderr
    assert f"gradverify check {existing}" in result.stderr
    assert not (project / "specs/new.yaml").exists()


def test_init_notices_an_op_named_at_run_time_once_it_is_loaded(project: Path) -> None:
    (project / "specs/square.yaml").write_text(spec(f"op:{PACKAGE}::square"), encoding="utf-8")
    arguments = ["init", f"{PACKAGE}.computed:square", "-o", "specs/new.yaml", "--no-isolation"]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == ExitCode.USAGE
    assert "specs/square.yaml:1 already has a spec for" in result.stderr
    assert not (project / "specs/new.yaml").exists()


def test_init_with_force_writes_another_spec(project: Path) -> None:
    arguments = ["init", f"{PACKAGE}/ops.py:GeluTanh", "-o", "specs/new.yaml", "--force"]
    result = CliRunner().invoke(app, [*arguments, "--no-isolation"])
    assert result.exit_code == ExitCode.OK, result.stderr
    assert (project / "specs/new.yaml").is_file()


def test_a_package_is_found_before_a_module_of_its_name(tmp_path: Path) -> None:
    # As Python's own import does: keys and identities must cover the file import runs.
    (tmp_path / "helpers.py").write_text("", encoding="utf-8")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("", encoding="utf-8")

    assert module_file_in("helpers", tmp_path) == (tmp_path / "helpers" / "__init__.py").resolve()
