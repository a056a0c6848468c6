"""[tool.gradverify] in pyproject.toml: found upward from the cwd, validated, and applied
under command-line flags and spec keys."""

from __future__ import annotations

import json
import re
import textwrap
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from gradverify.spec.config import (
    Config,
    ConfigError,
    Settings,
    find_pyproject,
    load_config,
    with_defaults,
)
from gradverify.spec.load import parse_spec
from gradverify.spec.models import Tolerance

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ("text", "json", "junit", "github", "sarif")

# A Function whose backward is off by a relative 1e-4: inside the default tolerance
# (rtol 1e-3), outside a tight one.
SLIGHTLY_OFF = """\
import torch


class SlightlyOff(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2.0 * (1 + 1e-4)
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def project(tmp_path: Path, pyproject: str | None = None) -> str:
    """A project with a Function in a module of its own name, and its spec under specs/."""
    module = f"gv_config_{uuid.uuid4().hex[:8]}"  # fresh: modules stay cached across tests
    write(tmp_path / f"{module}.py", SLIGHTLY_OFF)
    spec = f"""\
        target: {module}:SlightlyOff
        checks: [finite_difference]
        cases:
          - name: vector
            inputs: [{{shape: [4], low: 0.5, high: 1.0}}]
        """
    write(tmp_path / "specs" / "off.yaml", spec)
    if pyproject is not None:
        write(tmp_path / "pyproject.toml", pyproject)
    return module


def invoke(*arguments: str):
    return CliRunner().invoke(app, ["check", *arguments, "--no-isolation", "--no-cache"])


# --- finding and reading ------------------------------------------------------------------


def test_no_pyproject_means_built_in_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if find_pyproject() is not None:
        pytest.skip("a pyproject.toml above the temporary directory")
    config = load_config()
    assert config == Config(Settings())
    assert config.spec_paths == ["specs"]
    assert config.note is None


def test_the_nearest_pyproject_upward_is_used(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradverify]\nspecs = ["gradspecs"]\nmode = "full"\n')
    (tmp_path / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "src" / "deep")
    config = load_config()
    assert config.file == tmp_path / "pyproject.toml"
    assert config.settings.mode == "full"
    # Spec paths are relative to the pyproject, written as the user would type them here.
    assert config.spec_paths == [str(Path("..", "..", "gradspecs"))]
    assert config.note == f"configuration: {Path('..', '..', 'pyproject.toml')} [tool.gradverify]"


def test_a_nearer_pyproject_without_the_section_stops_the_search(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradverify]\nmode = "full"\n')
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "sub"\n')
    monkeypatch.chdir(tmp_path / "sub")
    config = load_config()
    assert config.file is None
    assert config.settings.mode is None


def test_every_key(tmp_path):
    write(
        tmp_path / "pyproject.toml",
        """\
        [tool.gradverify]
        specs = ["specs", "more_specs"]
        tolerance = {atol = 1e-7, rtol = 1e-5}
        mode = "randomized"
        timeout = 30
        jobs = 2
        format = "json"
        """,
    )
    settings = load_config(tmp_path, FORMATS).settings
    assert settings.specs == ["specs", "more_specs"]
    assert settings.tolerance == Tolerance(atol=1e-7, rtol=1e-5)
    assert (settings.mode, settings.timeout, settings.jobs, settings.format) == (
        "randomized",
        30.0,
        2,
        "json",
    )


# --- errors name the file, the line and the key -------------------------------------------


CONFIG_ERRORS = {
    "unknown key": (
        '[project]\nname = "x"\n\n[tool.gradverify]\nmode = "full"\ntolerence = {atol = 1e-6}\n',
        6,
        "tool.gradverify.tolerence",
        "unknown key 'tolerence' (did you mean 'tolerance'?)",
    ),
    "bad mode": (
        '[tool.gradverify]\nspecs = ["specs"]\nmode = "fast"\n',
        3,
        "tool.gradverify.mode",
        "'full', 'randomized' or 'auto'",
    ),
    "negative timeout": (
        "[tool.gradverify]\ntimeout = -1\n",
        2,
        "tool.gradverify.timeout",
        "greater than 0",
    ),
    "unknown tolerance key in a sub-table": (
        "[tool.gradverify]\njobs = 1\n\n[tool.gradverify.tolerance]\natol = 1e-6\nrtl = 1e-3\n",
        6,
        "tool.gradverify.tolerance.rtl",
        "unknown key 'rtl' (did you mean 'rtol'?); valid keys: atol, eps, nondet_tol, rtol",
    ),
    "unknown format": (
        '[tool.gradverify]\nformat = "jsn"\n',
        2,
        "tool.gradverify.format",
        "unknown format 'jsn' (did you mean 'json'?)",
    ),
    "jobs as a string": (
        '[tool.gradverify]\njobs = "4"\n',
        2,
        "tool.gradverify.jobs",
        "valid integer",
    ),
    "specs not a list": (
        '[tool.gradverify]\nspecs = "specs"\n',
        2,
        "tool.gradverify.specs",
        "valid list",
    ),
}


@pytest.mark.parametrize("case", CONFIG_ERRORS, ids=list(CONFIG_ERRORS))
def test_errors_name_file_line_and_key(tmp_path, case):
    text, line, key, words = CONFIG_ERRORS[case]
    write(tmp_path / "pyproject.toml", text)
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, FORMATS)
    message = raised.value.render()
    assert message.startswith(f"{tmp_path / 'pyproject.toml'}:{line}: {key}: "), message
    assert words in message


def test_invalid_toml_is_located(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.gradverify]\nmode = full\n")
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path)
    assert re.match(r".*pyproject\.toml:2:\d+: invalid TOML: ", raised.value.render())


def test_a_config_error_is_one_clear_line_from_the_cli(tmp_path, monkeypatch):
    project(tmp_path, '[tool.gradverify]\nmod = "full"\n')
    monkeypatch.chdir(tmp_path)
    result = invoke()
    assert result.exit_code == ExitCode.USAGE, result.output
    assert result.stderr.strip() == (
        "error: pyproject.toml:2: tool.gradverify.mod: unknown key 'mod' (did you mean "
        "'mode'?); valid keys: device, explore, extra_checks, format, jobs, mode, specs, "
        "surrogates, timeout, tolerance"
    )


# --- precedence: flag > spec key > config > built-in default -------------------------------


def entry(text: str):
    return parse_spec(textwrap.dedent(text), "spec.yaml")[0]


def test_config_fills_only_what_the_spec_leaves_out():
    config = Config(Settings(tolerance=Tolerance(atol=1e-9, rtol=1e-9), mode="full", timeout=7.0))
    bare = entry("target: m:F\ncases: [{name: c}]\n")
    own = entry(
        "target: m:F\nmode: randomized\ntimeout: 3\ntolerance: {rtol: 0.5}\ncases: [{name: c}]\n"
    )
    [bare, own] = with_defaults([bare, own], config)
    assert (bare.spec.mode, bare.spec.timeout) == ("full", 7.0)
    assert bare.spec.tolerance == Tolerance(atol=1e-9, rtol=1e-9)
    assert (own.spec.mode, own.spec.timeout) == ("randomized", 3.0)
    # The spec's own tolerance keeps what it writes; the rest comes from the config.
    assert own.spec.tolerance == Tolerance(atol=1e-9, rtol=0.5)


def test_a_surrogates_pattern_declares_a_convention_where_the_spec_says_nothing():
    config = Config(Settings(surrogates=["pkg.lie.*"]))
    silent = entry("target: pkg.lie.groups:Exp\ncases: [{name: c}]\n")
    exact = entry("target: pkg.lie.groups:Log\ngradient: exact\ncases: [{name: c}]\n")
    other = entry("target: pkg.nn:Exp\ncases: [{name: c}]\n")
    [silent, exact, other] = with_defaults([silent, exact, other], config)
    assert silent.spec.gradient == "surrogate"
    assert exact.spec.gradient == "exact"  # the spec's own word wins
    assert other.spec.gradient == "exact" and "gradient" not in other.spec.model_fields_set


def test_without_config_entries_are_unchanged():
    bare = entry("target: m:F\ncases: [{name: c}]\n")
    assert with_defaults([bare], Config(Settings())) == [bare]


def test_a_tight_configured_tolerance_fails_what_the_default_passes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project(tmp_path)
    assert invoke().exit_code == ExitCode.OK
    write(tmp_path / "pyproject.toml", "[tool.gradverify]\ntolerance = {atol = 0.0, rtol = 1e-6}\n")
    assert invoke().exit_code == ExitCode.FAILED


def test_the_report_says_which_config_was_used(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project(tmp_path, '[tool.gradverify]\nformat = "json"\n')
    result = invoke()
    assert result.exit_code == ExitCode.OK, result.output
    report = json.loads(result.stdout)  # format = "json" from the config
    assert report["notes"][0] == "configuration: pyproject.toml [tool.gradverify]"
    text = invoke("--format", "text")  # the flag wins
    assert text.stdout.splitlines()[0] == "configuration: pyproject.toml [tool.gradverify]"


def test_configured_spec_paths_are_what_check_runs_without_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = project(tmp_path, '[tool.gradverify]\nspecs = ["gradspecs"]\nformat = "json"\n')
    (tmp_path / "specs").rename(tmp_path / "gradspecs")
    result = invoke()
    assert result.exit_code == ExitCode.OK, result.output
    assert {r["target"] for r in json.loads(result.stdout)["results"]} == {f"{module}:SlightlyOff"}
    (tmp_path / "gradspecs").rename(tmp_path / "elsewhere")
    missing = invoke()
    assert missing.exit_code == ExitCode.USAGE
    assert "no spec path 'gradspecs'" in missing.stderr


# --- the docs' snippet (docs/integrations.md) -----------------------------------------------------------------


def readme_block(after: str, language: str) -> str:
    """The first ```language block of docs/integrations.md after the line `after`."""
    readme = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    start = readme.index(after)
    found = re.search(rf"```{language}\n(.*?)```", readme[start:], re.DOTALL)
    assert found, f"no ```{language} block after {after!r} in docs/integrations.md"
    return found.group(1)


def test_the_readme_configuration_snippet(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", readme_block("## Configuration", "toml"))
    (tmp_path / "specs").mkdir()
    monkeypatch.chdir(tmp_path)
    config = load_config(formats=FORMATS)
    assert config.file == tmp_path / "pyproject.toml"
    settings = config.settings
    assert settings.specs and settings.tolerance is not None
    assert None not in (settings.mode, settings.timeout, settings.jobs, settings.format)
