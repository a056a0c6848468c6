"""A missing dependency told apart from a broken module of the user's, from the import error's
message alone (gradverify.target.dependencies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify.target.dependencies import needed_package

IMPORTING = "cannot load target 'mypkg.ops:F': importing 'mypkg.ops' raised "


@pytest.mark.parametrize(
    ("message", "needed"),
    [
        (
            IMPORTING + "ModuleNotFoundError: No module named 'gv_absent_kernels'",
            "needs gv_absent_kernels (not installed)",
        ),
        (
            IMPORTING + "ModuleNotFoundError: No module named 'gv_absent_kernels.language'",
            "needs gv_absent_kernels (not installed)",
        ),
        (
            IMPORTING + "ModuleNotFoundError: No module named 'torch._gv_absent'",
            "needs torch._gv_absent (not in the torch installed here)",
        ),
        (
            IMPORTING + "ImportError: cannot import name 'gv_absent' from 'numpy' (/x.py)",
            "needs numpy (the one installed has no 'gv_absent')",
        ),
        (
            "ModuleNotFoundError: No module named 'gv_absent_kernels'",
            "needs gv_absent_kernels (not installed)",
        ),
    ],
)
def test_a_package_not_of_the_users_is_needed(message: str, needed: str, tmp_path: Path) -> None:
    assert needed_package(message, "mypkg.ops:F", tmp_path) == needed


@pytest.mark.parametrize(
    "message",
    [
        IMPORTING + "ModuleNotFoundError: No module named 'mypkg._not_written'",
        IMPORTING + "ImportError: cannot import name 'helper' from 'mypkg' (/p/mypkg/__init__.py)",
        IMPORTING + "ModuleNotFoundError: No module named 'sibling'",  # in the project
        IMPORTING + "RuntimeError: No module named 'gv_absent_kernels' in the registry",
        "AttributeError: 'FBackward' object has no attribute 'scale'",
    ],
)
def test_the_users_own_modules_and_other_errors_are_not_dependencies(
    message: str, tmp_path: Path
) -> None:
    (tmp_path / "sibling.py").write_text("", encoding="utf-8")

    assert needed_package(message, "mypkg.ops:F", tmp_path) is None
