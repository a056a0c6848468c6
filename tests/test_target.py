"""load_target: `module:Attr` or `file.py:Attr` to a callable, or a TargetError to act on."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import gradverify
from gradverify.errors import TargetError
from gradverify.target.loading import load_target

FUNCTION_SOURCE = """\
import torch


class Outer:
    class Inner(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale=2.0):
            return x * scale

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2.0, None


def plain(a, b=1, *rest):
    return a


VALUE = 3
"""


class UserCode:
    """Writes user modules into the working directory, named with a prefix unique to the test."""

    def __init__(self, directory: Path, prefix: str) -> None:
        self.directory = directory
        self.prefix = prefix

    def write(self, relative: str, source: str) -> str:
        """Write `source` at `relative` (`{m}` in either is the prefix); return the path."""
        relative = relative.format(m=self.prefix)
        path = self.directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).format(m=self.prefix), encoding="utf-8")
        importlib.invalidate_caches()
        return relative


@pytest.fixture
def user_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[UserCode]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # also restores sys.path afterwards
    prefix = "gvuser_" + "".join(c if c.isalnum() else "_" for c in request.node.name)
    yield UserCode(tmp_path, prefix)
    for name in [name for name in sys.modules if name.startswith(prefix)]:
        del sys.modules[name]


def load_error(spec: str) -> TargetError:
    with pytest.raises(TargetError) as caught:
        load_target(spec)
    return caught.value


# Loading


def test_module_target_is_a_function_called_through_apply() -> None:
    target = load_target("tests.functions.correct:Square")

    assert target.is_function
    assert target.call == target.obj.apply
    assert target.parameters == ("x",)
    assert target.defaults == {}
    assert target.name == "Square"
    assert target.spec == "tests.functions.correct:Square"


def test_parameters_drop_ctx_and_keep_literal_parameters() -> None:
    assert load_target("tests.functions.correct:Scale").parameters == ("x", "alpha")
    assert load_target("tests.functions.correct:MatMul").parameters == ("a", "b")


def test_setup_context_function_has_no_ctx_to_drop() -> None:
    target = load_target("tests.functions.correct:SetupContextSquare")

    assert target.parameters == ("x",)
    assert target.is_function


def test_defaults_are_forwards_defaults() -> None:
    linear = load_target("gradverify.examples.linear:Linear")
    clipped = load_target("gradverify.examples.activations:ClippedReLU")

    assert linear.parameters == ("input", "weight", "bias")
    assert linear.defaults == {"bias": None}
    assert clipped.parameters == ("x", "clip_val")
    assert clipped.defaults == {"clip_val": 6.0}


def test_argument_name_by_position() -> None:
    linear = load_target("gradverify.examples.linear:Linear")

    assert [linear.argument_name(index) for index in range(4)] == ["input", "weight", "bias", None]


def test_the_loaded_function_computes() -> None:
    import torch

    target = load_target("tests.functions.correct:Square")

    result = target.call(torch.tensor([3.0]))

    assert result.tolist() == [9.0]


def test_source_file_and_backward_line_point_at_backward() -> None:
    target = load_target("tests.functions.correct:Square")

    assert target.source_file is not None
    lines = Path(target.source_file).read_text(encoding="utf-8").splitlines()
    assert target.backward_line is not None
    # the `def` line, not the `@staticmethod` above it that inspect starts at (issue 23)
    assert lines[target.backward_line - 1].lstrip().startswith("def backward")
    assert lines[target.backward_line - 2].strip() == "@staticmethod"


def test_dotted_attribute_path(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write("{m}.py", FUNCTION_SOURCE)

    target = load_target(f"{module}:Outer.Inner")

    assert target.is_function
    assert target.name == "Outer.Inner"
    assert target.parameters == ("x", "scale")
    assert target.defaults == {"scale": 2.0}


def test_file_target(user_code: UserCode) -> None:
    path = user_code.write("code/{m}.py", FUNCTION_SOURCE)

    target = load_target(f"{path}:Outer.Inner")

    assert target.is_function
    assert target.obj.__module__ == Path(path).stem
    assert Path(target.source_file or "").resolve() == Path(path).resolve()


def test_file_target_inside_a_package_is_imported_as_part_of_it(user_code: UserCode) -> None:
    user_code.write("src/{m}pkg/__init__.py", "")
    user_code.write("src/{m}pkg/ops/__init__.py", "")
    layer = "from .helper import FACTOR\n" + FUNCTION_SOURCE
    path = user_code.write("src/{m}pkg/ops/layer.py", layer)
    user_code.write("src/{m}pkg/ops/helper.py", "FACTOR = 2\n")

    target = load_target(f"{path}:Outer.Inner")

    # Relative imports work because the file is imported with its package.
    assert target.obj.__module__ == f"{Path(path).parts[1]}.ops.layer"


def test_plain_function_target(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write("{m}.py", FUNCTION_SOURCE)

    target = load_target(f"{module}:plain")

    assert not target.is_function
    assert target.call is target.obj
    assert target.parameters == ("a", "b")
    assert target.defaults == {"b": 1}
    assert target.variadic == "rest"
    assert target.argument_name(3) == "rest[1]"


# Errors


@pytest.mark.parametrize("spec", ["no_colon", "pkg.mod:", ":Attr"])
def test_malformed_target(spec: str) -> None:
    error = load_error(spec)

    assert "expected `package.module:Attr`" in error.message
    assert error.target == spec


def test_module_not_found_suggests_a_close_name(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write("{m}_layers.py", FUNCTION_SOURCE)

    error = load_error(f"{module}_layer:Outer")

    assert error.message == f"no module named '{module}_layer' (did you mean '{module}_layers'?)"


def test_submodule_not_found_suggests_a_sibling(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write("{m}pkg/__init__.py", "")
    user_code.write("{m}pkg/layers.py", FUNCTION_SOURCE)

    error = load_error(f"{module}pkg.layres:Outer")

    assert f"no module named '{module}pkg.layres'" in error.message
    assert "(did you mean 'layers'?)" in error.message


def test_module_not_found_without_anything_close(user_code: UserCode) -> None:
    module = user_code.prefix

    error = load_error(f"{module}_qqqq:Attr")

    assert error.message == f"no module named '{module}_qqqq'"


def test_missing_file(user_code: UserCode) -> None:
    error = load_error("nowhere/layer.py:Attr")

    assert error.message == "no file 'nowhere/layer.py'"


def test_attribute_missing_suggests_a_close_name(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write("{m}.py", FUNCTION_SOURCE)

    error = load_error(f"{module}:Outr")

    assert error.message == f"'{module}' has no attribute 'Outr' (did you mean 'Outer'?)"


def test_nested_attribute_missing_names_the_path_walked(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write("{m}.py", FUNCTION_SOURCE)

    error = load_error(f"{module}:Outer.Iner")

    assert error.message == f"'{module}.Outer' has no attribute 'Iner' (did you mean 'Inner'?)"


def test_not_callable(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write("{m}.py", FUNCTION_SOURCE)

    error = load_error(f"{module}:VALUE")

    assert "int object is not callable" in error.message


def test_exception_while_importing_shows_the_users_frames(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write(
        "{m}.py",
        """\
        import math


        def build_table():
            return {{"scale": math.sqrt(-1)}}


        TABLE = build_table()
        """,
    )

    error = load_error(f"{module}:TABLE")

    assert error.message == f"importing '{module}' raised ValueError: math domain error"
    assert f'{module}.py", line 8, in <module>' in error.details
    assert f'{module}.py", line 5, in build_table' in error.details
    assert 'return {"scale": math.sqrt(-1)}' in error.details
    assert error.details.rstrip().endswith("ValueError: math domain error")
    assert "importlib" not in error.details
    assert "<frozen" not in error.details
    assert str(Path(gradverify.__file__).parent) not in error.details
    headline = f"cannot load target '{module}:TABLE': {error.message}"
    assert error.render() == f"{headline}\n{error.details}"


def test_missing_dependency_is_an_import_error_of_the_users_module(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write("{m}.py", "import torch\nimport {m}_not_installed_dependency\n")

    error = load_error(f"{module}:Attr")

    assert error.message.startswith(f"importing '{module}' raised ModuleNotFoundError")
    assert f"{module}_not_installed_dependency" in error.message
    assert f"no module named '{module}'" not in error.message
    assert f'{module}.py", line 2, in <module>' in error.details


def test_missing_dependency_in_a_package_init(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write("{m}pkg/__init__.py", "from . import missing_sibling\n")
    user_code.write("{m}pkg/layers.py", FUNCTION_SOURCE)

    error = load_error(f"{module}pkg.layers:Outer")

    assert error.message.startswith(f"importing '{module}pkg.layers' raised ImportError")
    assert '__init__.py", line 1, in <module>' in error.details


def test_syntax_error_in_the_users_module(user_code: UserCode) -> None:
    module = user_code.prefix
    user_code.write("{m}.py", "x = 1\ndef broken(:\n    pass\n")

    error = load_error(f"{module}:broken")

    assert error.message.startswith(f"importing '{module}' raised SyntaxError")
    assert f"{module}.py" in error.details
    assert "line 2" in error.details
