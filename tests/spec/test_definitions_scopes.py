"""Functions a package keeps besides its top level: nested in a class body (found, named by
qualified name, and loaded by it) and built inside a function (found, never importable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify.errors import UsageError
from gradverify.spec.definitions import definitions_in_directory, definitions_in_module
from gradverify.spec.identity import canonical
from gradverify.spec.plan import make_plan
from gradverify.target.loading import load_target

PACKAGE = "tests.functions.scopes_pkg"
SQUARE = f"{PACKAGE}.ops:Kernels.Square"
TRIPLE = f"{PACKAGE}.ops:Kernels.Triple"
SCALE = f"{PACKAGE}.ops:make_scale.<locals>.Scale"


def test_functions_nested_in_a_class_body_are_found_by_qualified_name() -> None:
    found = definitions_in_module(PACKAGE) or []

    assert [(d.target, d.built_in) for d in found] == [
        (SQUARE, None),
        (TRIPLE, None),  # through the nested base, itself a mixin without forward
        (SCALE, "make_scale"),
    ]


def test_a_nested_function_loads_by_its_qualified_name() -> None:
    target = load_target(SQUARE)

    assert target.is_function and target.obj.__qualname__ == "Kernels.Square"
    assert canonical(SQUARE) == SQUARE


def test_a_function_built_in_a_function_says_why_it_needs_a_spec() -> None:
    (scale,) = [d for d in definitions_in_module(PACKAGE) or [] if d.built_in]

    assert scale.unimportable is not None
    assert scale.unimportable.startswith("needs a spec: defined inside make_scale()")
    assert all(d.unimportable is None for d in definitions_in_module(PACKAGE) or [] if d != scale)


def test_a_file_whose_only_function_is_nested_is_not_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "nested.py").write_text(
        "import torch\n\nclass Outer:\n    class Double(torch.autograd.Function):\n"
        "        @staticmethod\n        def forward(ctx, x):\n            return 2 * x\n",
        encoding="utf-8",
    )

    (found,) = definitions_in_directory(str(tmp_path))
    plan = make_plan([str(tmp_path)])

    assert found.target.endswith("nested.py:Outer.Double")
    assert [item.definition for item in plan.defined] == [found]


def test_a_class_in_a_method_is_built_in_that_method(tmp_path: Path) -> None:
    (tmp_path / "method.py").write_text(
        "from torch import autograd\n\nclass Layer:\n    def build(self):\n"
        "        if True:\n            class Step(autograd.Function):\n"
        "                def forward(ctx, x):\n                    return x\n"
        "        return Step\n",
        encoding="utf-8",
    )

    (found,) = definitions_in_directory(str(tmp_path))

    assert found.target.endswith("method.py:Layer.build.<locals>.Step")
    assert found.built_in == "Layer.build"


def test_a_class_in_a_nested_function_is_built_in_the_innermost(tmp_path: Path) -> None:
    (tmp_path / "graphs.py").write_text(
        "import torch\n\ndef make_graphed(modules):\n    def one(module):\n"
        "        class Graphed(torch.autograd.Function):\n"
        "            @staticmethod\n            def forward(ctx, x):\n                return x\n"
        "        return Graphed\n    return [one(m) for m in modules]\n",
        encoding="utf-8",
    )

    (found,) = definitions_in_directory(str(tmp_path))

    assert found.target.endswith("graphs.py:make_graphed.<locals>.one.<locals>.Graphed")
    assert found.built_in == "one"


def test_a_package_with_no_function_anywhere_is_still_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text(
        "class Outer:\n    class Inner:\n        def forward(self, x):\n            return x\n",
        encoding="utf-8",
    )

    with pytest.raises(UsageError, match=r"defines no torch\.autograd\.Function"):
        make_plan([str(tmp_path)])
