"""Locations of user code are paths the user can open or find, never a bare file name."""

from __future__ import annotations

import shutil
from pathlib import Path

from gradverify.target.paths import user_path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tests" / "functions" / "lowlevel_pkg"
CRASH = """
target: {module}.lowlevel:FilterWithBrokenBackward
checks: [backward]
cases: [{{name: case, inputs: [{{shape: [3]}}]}}]
"""


def test_below_the_current_directory_the_path_is_relative_to_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert user_path(str(tmp_path / "pkg" / "sub" / "lowlevel.py")) == "pkg/sub/lowlevel.py"


def test_in_an_import_root_the_path_starts_at_the_package(tmp_path, monkeypatch):
    site_packages = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    monkeypatch.chdir(ROOT)
    file = site_packages / "pkg" / "sub" / "lowlevel.py"
    roots = [str(tmp_path / "venv" / "lib" / "python3.12"), str(site_packages), ""]
    # The most specific root wins: site-packages, not the standard library above it.
    assert user_path(str(file), roots) == "pkg/sub/lowlevel.py"


def test_elsewhere_the_path_stays_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    file = tmp_path / "elsewhere" / "lowlevel.py"
    assert user_path(str(file), [str(tmp_path / "other")]) == file.as_posix()


def test_a_relative_path_is_kept():
    assert user_path("specs/examples.yaml", []) == "specs/examples.yaml"


def test_a_crash_below_the_project_is_located_by_its_project_path(run_spec, only):
    assert len(list(PACKAGE.rglob("lowlevel.py"))) == 3  # a bare name would be ambiguous
    report = run_spec(CRASH.format(module="tests.functions.lowlevel_pkg"))
    result = only(report, check="backward")
    assert result.status.value == "fail"
    assert " at tests/functions/lowlevel_pkg/conv/lowlevel.py:" in result.message


def test_a_crash_in_an_installed_package_is_located_from_the_package_root(
    run_spec, only, tmp_path, monkeypatch
):
    # As if installed: a copy in a directory on sys.path, outside the project.
    site_packages = tmp_path / "site-packages"
    shutil.copytree(PACKAGE, site_packages / "wavelets_copy")
    monkeypatch.syspath_prepend(str(site_packages))
    report = run_spec(CRASH.format(module="wavelets_copy"))
    result = only(report, check="backward")
    assert result.status.value == "fail"
    assert " at wavelets_copy/conv/lowlevel.py:" in result.message
