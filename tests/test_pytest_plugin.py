"""The pytest plugin, run by the real pytest through `pytester` in a temporary project."""

from __future__ import annotations

import re
import shlex
import textwrap

import pytest
import torch
from typer.testing import CliRunner

import gradverify.api
import gradverify.engine.case
import gradverify.report.text
import gradverify.run.session
import gradverify.spec.plan

# pytester restores sys.modules after each test, keeping only what was imported before it.
# So torch (importing it twice crashes) and the gradverify modules the plugin imports lazily
# (else a later run mixes fresh copies with stale ones) are imported before any test runs.
PRELOADED = (
    torch,
    gradverify.api,
    gradverify.report.text,
    gradverify.engine.case,
    gradverify.spec.plan,
    gradverify.run.session,
)

pytest_plugins = ["pytester"]
# Patterns below are fnmatch patterns: "[[]" is a literal "[".

FUNCTIONS = """
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 2 * x


class SquareWrongSign(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return -grad_output * 2 * x


class ReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x > 0)
"""

CORRECT = """
target: fns:Square
checks: [forward, finite_difference, gradcheck, jvp]
cases:
  - name: vector
    inputs: [{shape: [4]}]
  - name: matrix
    inputs: [{shape: [2, 3]}]
"""

BUGGY = """
target: fns:SquareWrongSign
checks: [forward, finite_difference, gradcheck]
cases:
  - name: vector
    inputs: [{shape: [4]}]
"""

AT_KINK = """
target: fns:ReLU
checks: [finite_difference]
cases:
  - name: at_zero
    inputs: [{values: [-1.0, 0.0, 2.0]}]
"""


INI = """
[pytest]
filterwarnings = ignore:Module already imported:pytest.PytestAssertRewriteWarning
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A user's project: a module of Functions and a directory of specs."""
    pytester.makepyfile(fns=FUNCTIONS)
    # Run in this process, pytest finds gradverify (the plugin's package) already imported.
    pytester.makeini(INI)
    specs = pytester.mkdir("specs")
    (specs / "square.yaml").write_text(CORRECT, encoding="utf-8")
    return pytester


def add_spec(pytester: pytest.Pytester, name: str, text: str) -> None:
    (pytester.path / "specs" / name).write_text(textwrap.dedent(text), encoding="utf-8")


def test_a_correct_function_passes_one_item_per_target_case_and_check(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("--gradverify", "specs", "-v", "-rs")
    result.assert_outcomes(passed=6, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "specs/square.yaml::fns:Square::vector::forward PASSED*",
            "specs/square.yaml::fns:Square::vector::finite_difference PASSED*",
            "specs/square.yaml::fns:Square::matrix::gradcheck PASSED*",
            "specs/square.yaml::fns:Square::matrix::jvp SKIPPED*",
        ]
    )
    # A check that does not apply is a pytest skip, with gradverify's reason.
    result.stdout.fnmatch_lines(["SKIPPED *the Function defines no jvp*"])
    assert result.ret == pytest.ExitCode.OK


def test_a_buggy_function_fails_with_the_clis_explanation(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_spec(project, "buggy.yaml", BUGGY)
    monkeypatch.setenv("COLUMNS", "100")  # pytest's width, as the CLI's off a terminal
    result = project.runpytest("--gradverify", "specs")
    result.assert_outcomes(passed=7, skipped=2, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*_ fns:SquareWrongSign[[]vector]::finite_difference _*",
            "gradient of argument 0 (x) is wrong at element *",
            "fns:SquareWrongSign  case vector  specs/buggy.yaml:5",
            "*finite_difference · argument 0 (x)*",
            "*analytical *",
            "*numerical *",
            "*likely cause  the gradient has the opposite sign*",
            "*_ fns:SquareWrongSign[[]vector]::gradcheck _*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["FAILED specs/buggy.yaml::fns:SquareWrongSign::vector::finite_difference - gradient*"]
    )
    from gradverify.cli import app

    cli = CliRunner().invoke(
        app, ["check", "specs/buggy.yaml", "--no-isolation", "--no-cache", "--seed", "0"]
    )
    assert cli.exit_code == 1, cli.output
    panel = _panel(cli.output, "finite_difference")
    assert panel and panel == _panel(result.stdout.str(), "finite_difference")


def _panel(output: str, check: str) -> list[str]:
    """The lines of the failure panel titled `check`, without trailing spaces."""
    lines = [line.rstrip() for line in output.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith(f"╭─ ✗ {check} "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("╰"))
    return lines[start : end + 1]


def test_k_and_m_select_items_as_usual(project: pytest.Pytester) -> None:
    add_spec(project, "buggy.yaml", BUGGY)
    by_keyword = project.runpytest("--gradverify", "specs", "-k", "finite_difference", "-v")
    by_keyword.assert_outcomes(passed=2, failed=1, deselected=8)
    assert "::gradcheck" not in by_keyword.stdout.str()

    by_case = project.runpytest("--gradverify", "specs", "-k", "Square and matrix")
    by_case.assert_outcomes(passed=3, skipped=1, deselected=7)

    by_marker = project.runpytest("--gradverify", "specs", "-m", "gradverify(check='gradcheck')")
    by_marker.assert_outcomes(passed=2, failed=1, deselected=8)


def test_a_warning_passes_as_a_pytest_warning(project: pytest.Pytester) -> None:
    add_spec(project, "kink.yaml", AT_KINK)
    result = project.runpytest("--gradverify", "specs/kink.yaml")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*GradverifyWarning: fns:ReLU [[]at_zero] finite_difference (x): non-differentiable*"]
    )
    # `-W error` makes a project strict about them, as with any warning.
    strict = project.runpytest(
        "--gradverify", "specs/kink.yaml", "-W", "error::gradverify.GradverifyWarning"
    )
    strict.assert_outcomes(failed=1)


def test_each_case_runs_once_for_all_its_items(project: pytest.Pytester) -> None:
    # Count the plugin's runs through a wrapper around the real session.run.
    project.makeconftest(
        """
        from gradverify.run import session

        runs = []
        original = session.run


        def counting(entries, *args, **kwargs):
            runs.extend(case.name for entry in entries for case in entry.spec.cases)
            return original(entries, *args, **kwargs)


        def pytest_configure(config):
            session.run = counting


        def pytest_unconfigure(config):
            session.run = original
            print(f"cases run: {sorted(runs)}")
        """
    )
    result = project.runpytest("--gradverify", "specs", "-s")
    result.assert_outcomes(passed=6, skipped=2)
    result.stdout.fnmatch_lines(["cases run: [[]'matrix', 'vector']"])


def test_all_cases_of_a_run_share_one_fork_server_and_one_worker_pool(
    project: pytest.Pytester,
) -> None:
    # Count, in pytest's own process, the fork servers started, the worker pools opened
    # (with their size) and the cases each pool ran, through wrappers around the real ones.
    project.makeconftest(
        """
        from gradverify.run import forkserver, pool

        counts = {"servers": 0, "pools": [], "cases": []}
        original_server, original_pool = forkserver.ForkServer.__init__, pool.WorkerPool.__init__
        original_run = pool.WorkerPool.run


        def counting_server(self, *args, **kwargs):
            counts["servers"] += 1
            original_server(self, *args, **kwargs)


        def counting_pool(self, size, *args, **kwargs):
            counts["pools"].append(size)
            original_pool(self, size, *args, **kwargs)


        def counting_run(self, tasks, *args, **kwargs):
            counts["cases"].append(len(tasks))
            return original_run(self, tasks, *args, **kwargs)


        forkserver.ForkServer.__init__ = counting_server
        pool.WorkerPool.__init__ = counting_pool
        pool.WorkerPool.run = counting_run


        def pytest_unconfigure(config):
            print(f"fork servers {counts['servers']}, pools {counts['pools']}, "
                  f"cases per pool {counts['cases']}")
        """
    )
    add_spec(project, "buggy.yaml", BUGGY)
    result = project.runpytest_subprocess("--gradverify", "specs", "-s", "--gradverify-jobs", "2")
    result.assert_outcomes(passed=7, skipped=2, failed=2)
    # Three cases in two files: one pool of two workers.
    result.stdout.fnmatch_lines(["fork servers 1, pools [[]2], cases per pool [[]3]"])

    # Only the selected cases run, with as many workers as asked.
    selected = project.runpytest_subprocess(
        "--gradverify", "specs", "-s", "-k", "vector", "--gradverify-jobs", "1"
    )
    selected.assert_outcomes(passed=4, skipped=1, failed=2, deselected=4)
    selected.stdout.fnmatch_lines(["fork servers 1, pools [[]1], cases per pool [[]2]"])


def test_a_target_that_cannot_load_fails_its_items_with_one_clear_message(
    project: pytest.Pytester,
) -> None:
    add_spec(
        project,
        "typo.yaml",
        """
        target: fns:Sqaure
        checks: [forward, gradcheck]
        cases:
          - name: vector
            inputs: [{shape: [3]}]
        """,
    )
    result = project.runpytest("--gradverify", "specs/typo.yaml")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["gradverify: cannot load target 'fns:Sqaure': 'fns' has no attribute 'Sqaure'*"]
    )
    assert "Traceback" not in result.stdout.str()


def test_an_invalid_spec_is_a_collection_error_naming_file_line_and_key(
    project: pytest.Pytester,
) -> None:
    add_spec(
        project,
        "bad.yaml",
        """
        target: fns:Square
        cases:
          - name: vector
            inputs: [{shap: [3]}]
        """,
    )
    result = project.runpytest("--gradverify", "specs")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["gradverify: specs/bad.yaml:5:*: cases[[]0].inputs[[]0].shap: unknown key 'shap'*"]
    )


def test_paths_come_from_the_ini_option_when_none_are_given(project: pytest.Pytester) -> None:
    project.mkdir("more")
    (project.path / "more" / "kink.yaml").write_text(AT_KINK, encoding="utf-8")
    project.makeini(INI + "gradverify_paths = more\n")
    result = project.runpytest("--gradverify")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["more/kink.yaml *"])


def test_a_missing_path_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--gradverify", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gradverify: no such file or directory: *nowhere"])


def test_works_with_xdist_as_the_readme_says(project: pytest.Pytester) -> None:
    add_spec(project, "buggy.yaml", BUGGY)
    (command,) = [c for c in readme_commands() if "-n" in c]
    command = ["2" if word == "auto" else word for word in command]  # two workers suffice
    result = project.runpytest_subprocess(*command[1:])
    result.assert_outcomes(passed=7, skipped=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*likely cause  the gradient has the opposite sign*",
            "FAILED specs/buggy.yaml::fns:SquareWrongSign::vector::gradcheck - *",
        ]
    )


def test_the_plugin_is_inert_and_torch_free_without_the_option(
    project: pytest.Pytester,
) -> None:
    project.makeconftest(
        """
        import sys


        def pytest_unconfigure(config):
            print(f"torch imported: {'torch' in sys.modules}")
        """
    )
    project.makepyfile(test_plain="def test_plain():\n    assert True\n")
    plain = project.runpytest_subprocess("-s")
    plain.assert_outcomes(passed=1)
    plain.stdout.fnmatch_lines(["plugins:*gradverify-*", "torch imported: False"])
    assert "--gradverify" in project.runpytest_subprocess("--help").stdout.str()

    # The cases run in isolated workers, as `gradverify check` runs them: pytest's process
    # never imports torch for a spec that names its checks.
    with_specs = project.runpytest_subprocess("-s", "--gradverify", "specs", "-k", "forward")
    with_specs.assert_outcomes(passed=2, deselected=7)
    with_specs.stdout.fnmatch_lines(["torch imported: False"])


def test_collection_alone_does_not_import_torch(project: pytest.Pytester) -> None:
    """pytest's process never imports torch; the fork server does, from before collection
    starts, so that its import overlaps the collection of the project's own tests too."""
    project.makeconftest(
        """
        import sys


        def pytest_collection(session):
            from gradverify.run import forkserver

            print(f"server started before collection: {forkserver._server is not None}")


        def pytest_unconfigure(config):
            print(f"torch imported: {'torch' in sys.modules}")
        """
    )
    result = project.runpytest_subprocess("--gradverify", "specs", "--collect-only", "-q", "-s")
    result.stdout.fnmatch_lines(
        ["specs/square.yaml::fns:Square::vector::forward", "8 tests collected*"]
    )
    result.stdout.fnmatch_lines(["server started before collection: True"])
    result.stdout.fnmatch_lines(["torch imported: False"])


OPS = """
import torch


@torch.library.custom_op("{namespace}::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return 2 * x


@twice.register_fake
def _(x):
    return torch.empty_like(x)


twice.register_autograd(lambda ctx, grad: 2 * grad)
"""


def test_a_custom_op_gets_a_compile_item_as_the_cli_runs_it(project: pytest.Pytester) -> None:
    project.makepyfile(ops=OPS.format(namespace="plugin_ops"))
    for name, target in (("attribute", "ops:twice"), ("qualified", "ops:plugin_ops::twice")):
        add_spec(
            project, f"{name}.yaml",
            f"target: '{target}'\ncases: [{{name: v, inputs: [{{shape: [3]}}]}}]\n",
        )  # fmt: skip
    # In a process of its own: torch.compile registers libraries that cannot be imported
    # twice, as pytester's in-process runs would.
    result = project.runpytest_subprocess(
        "--gradverify", "specs/attribute.yaml", "specs/qualified.yaml", "-v"
    )
    for name, node in (("attribute", "ops:twice"), ("qualified", "ops:plugin_ops:twice")):
        result.stdout.fnmatch_lines([f"specs/{name}.yaml::{node}::v::opcheck PASSED*"])
        result.stdout.fnmatch_lines([f"specs/{name}.yaml::{node}::v::compile PASSED*"])
    assert result.ret == pytest.ExitCode.OK


def test_a_target_is_known_as_a_custom_op_without_importing_it_in_pytests_process(
    project: pytest.Pytester,
) -> None:
    # A worker loads `ops:twice` (no `checks:`, so its items depend on whether it is an op).
    project.makepyfile(ops=OPS.format(namespace="collected_ops"))
    add_spec(
        project, "ops.yaml", "target: 'ops:twice'\ncases: [{name: v, inputs: [{shape: [3]}]}]\n"
    )
    project.makeconftest(
        """
        import sys


        def pytest_unconfigure(config):
            print(f"imported: torch {'torch' in sys.modules}, ops {'ops' in sys.modules}")
        """
    )
    result = project.runpytest_subprocess("--gradverify", "specs/ops.yaml", "--co", "-q", "-s")
    result.stdout.fnmatch_lines(["specs/ops.yaml::ops:twice::v::compile"])
    result.stdout.fnmatch_lines(["imported: torch False, ops False"])


def test_a_function_gets_no_compile_item_unless_asked(project: pytest.Pytester) -> None:
    add_spec(
        project, "plain.yaml", "target: fns:Square\ncases: [{name: v, inputs: [{shape: [3]}]}]\n"
    )
    collected = project.runpytest("--gradverify", "specs/plain.yaml", "--collect-only", "-q")
    assert "::compile" not in collected.stdout.str()
    assert "specs/plain.yaml::fns:Square::v::opcheck" in collected.stdout.str()
    add_spec(
        project, "asked.yaml",
        "target: fns:Square\nextra_checks: [compile]\ncases: [{name: v, inputs: [{shape: [3]}]}]\n",
    )  # fmt: skip
    asked = project.runpytest("--gradverify", "specs/asked.yaml", "--collect-only", "-q")
    asked.stdout.fnmatch_lines(["specs/asked.yaml::fns:Square::v::compile"])


def test_the_configuration_fills_what_a_spec_leaves_unset(project: pytest.Pytester) -> None:
    # As `gradverify check` does: [tool.gradverify] extra_checks adds compile to a spec that
    # chooses no checks, and its tolerance reaches the run.
    add_spec(
        project, "wrong.yaml",
        "target: fns:SquareWrongSign\ncases: [{name: v, inputs: [{shape: [3]}]}]\n",
    )  # fmt: skip
    wrong = ["--gradverify", "specs/wrong.yaml", "-k", "finite_difference"]
    project.runpytest(*wrong).assert_outcomes(failed=1)
    # |-2x - 2x| <= 4 on [-1, 1]: within an atol of 10 the wrong sign goes unseen
    project.makepyprojecttoml(
        '[tool.gradverify]\nextra_checks = ["compile"]\ntolerance = {atol = 10.0, rtol = 10.0}\n'
    )
    project.runpytest(*wrong).assert_outcomes(passed=1)
    collected = project.runpytest("--gradverify", "specs/wrong.yaml", "--collect-only", "-q")
    collected.stdout.fnmatch_lines(["specs/wrong.yaml::fns:SquareWrongSign::v::compile"])


def test_an_invalid_configuration_is_one_clear_collection_error(project: pytest.Pytester) -> None:
    project.makepyprojecttoml('[tool.gradverify]\nextra_checks = ["compiel"]\n')
    result = project.runpytest("--gradverify", "specs")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["gradverify: pyproject.toml*extra_checks*compile*"])
    assert "Traceback" not in result.stdout.str()


def test_an_attribute_that_does_not_load_is_reported_by_its_items(
    project: pytest.Pytester,
) -> None:
    add_spec(project, "gone.yaml", "target: fns:Gone\ncases: [{name: v, inputs: [{shape: [3]}]}]\n")
    result = project.runpytest("--gradverify", "specs/gone.yaml", "-k", "forward")
    assert result.parseoutcomes()["failed"] == 1
    result.stdout.fnmatch_lines(["*'fns' has no attribute 'Gone'*"])


def test_the_readme_commands_run(project: pytest.Pytester) -> None:
    commands = [c for c in readme_commands() if "-n" not in c]
    assert len(commands) == 3
    for command in commands:
        assert command[:3] == ["pytest", "--gradverify", "specs/"]
        result = project.runpytest(*command[1:])
        assert result.ret == pytest.ExitCode.OK, command
        assert result.parseoutcomes()["passed"] >= 2, command


def test_the_readme_ini_runs_the_specs_with_the_other_tests(project: pytest.Pytester) -> None:
    (ini,) = _code_blocks(readme_section(), "ini")
    project.makeini(INI + ini.split("[pytest]", 1)[1])
    (project.path / "specs" / "kink.yaml").write_text(AT_KINK, encoding="utf-8")
    project.makepyfile(test_plain="def test_plain():\n    assert True\n")
    from_addopts = project.runpytest("test_plain.py")  # addopts' --gradverify=specs
    from_addopts.assert_outcomes(passed=8, skipped=2, warnings=1)
    from_ini = project.runpytest("--gradverify", "-k", "kink or plain")  # gradverify_paths
    from_ini.assert_outcomes(passed=2, deselected=8, warnings=1)


def test_the_readme_python_example_passes(pytester: pytest.Pytester) -> None:
    (example,) = _code_blocks(readme_section(), "python")
    pytester.makeini(INI)
    pytester.makepyfile(test_readme_example=example)
    result = pytester.runpytest("-W", "error::gradverify.GradverifyWarning")
    result.assert_outcomes(passed=2)


def readme_section() -> str:
    from tests.conftest import ROOT

    page = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    match = re.search(r"^## pytest plugin and Python API$(.*?)(?=^## |\Z)", page, re.M | re.S)
    assert match, "docs/integrations.md has no section 'pytest plugin and Python API'"
    return match.group(1)


def readme_commands() -> list[list[str]]:
    """The pytest command lines of the section's shell snippet, without comments."""
    (shell,) = _code_blocks(readme_section(), "sh")
    return [shlex.split(line, comments=True) for line in shell.splitlines() if line.strip()]


def _code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)
