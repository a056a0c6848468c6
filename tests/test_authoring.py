"""Authoring help: `init` (a starter spec from forward's signature), `schema` (checked with
jsonschema against real specs), `checks` and `explain`."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from gradverify.authoring import spec_schema
from gradverify.catalogue import CATALOGUE, SUMMARIES
from gradverify.catalogue import LINT_RULES as RULES
from gradverify.catalogue.explanations import ALIASES, EXPLANATIONS, TOPICS
from gradverify.checks import REGISTRY, get_check
from gradverify.checks.vmap import BATCH
from gradverify.cli import app
from gradverify.exitcodes import ExitCode
from gradverify.spec.load import load_spec_file
from gradverify.spec.models import CHECK_IDS
from gradverify.spec.yamlnodes import load_yaml

ROOT = Path(__file__).resolve().parents[1]


def invoke(*arguments: str):
    return CliRunner().invoke(app, list(arguments))


# --- schema -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def validator():
    schema = spec_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def spec_data(path: Path):
    """The spec as gradverify reads it (anchors and merges resolved)."""
    return load_yaml(path.read_text(encoding="utf-8")).data


VALID = sorted(
    [*(ROOT / "specs").glob("*.yaml"), *(ROOT / "tests" / "specs" / "valid").glob("*.y*ml")]
)
# Invalid specs whose mistake JSON Schema can express (the others are values-level rules:
# low < high, ragged values, unique case names, or YAML-level errors).
INVALID = [
    "bad_dtype.yaml",
    "empty.yaml",
    "missing_cases.yaml",
    "second_function_unknown_key.yaml",
    "shape_and_values.yaml",
    "top_level_list.yaml",
    "unknown_check.yaml",
    "unknown_key.yaml",
]


@pytest.mark.parametrize("path", VALID, ids=lambda path: path.name)
def test_every_bundled_and_valid_spec_validates(validator, path):
    load_spec_file(path)  # gradverify accepts it ...
    errors = [error.message for error in validator.iter_errors(spec_data(path))]
    assert errors == []  # ... and so does the schema


@pytest.mark.parametrize("name", INVALID)
def test_invalid_specs_do_not_validate(validator, name):
    data = spec_data(ROOT / "tests" / "specs" / "invalid" / name)
    assert not validator.is_valid(data)


def test_the_schema_rejects_what_editors_should_underline(validator):
    base = {"target": "m:F", "cases": [{"name": "c", "inputs": [{"shape": [3]}]}]}
    assert validator.is_valid(base)
    literal_mapping = {"name": "c", "inputs": [{"value": {"a": 1}}, 2.0, None, "s", [1, 2]]}
    assert validator.is_valid({**base, "cases": [literal_mapping]})
    assert validator.is_valid({"functions": [base, base]})
    assert validator.is_valid({**base, "target": "path/file.py:Outer.Inner"})
    for wrong in (
        {**base, "target": "no_colon"},
        {**base, "mode": "fast"},
        {**base, "tolerance": {"atl": 1e-6}},
        {**base, "cases": [{"name": "c", "inputs": [{"shape": [3], "device": "gpu"}]}]},
        {**base, "cases": [{"name": "c", "inputs": [{"dtype": "float32"}]}]},
        {"functions": [base], "target": "m:F"},
    ):
        assert not validator.is_valid(wrong), wrong


def test_gradverify_schema_prints_the_schema_without_importing_torch():
    completed = run_python_cli(["schema"])
    assert "torch imported: False exit: 0" in completed.stderr
    assert json.loads(completed.stdout) == spec_schema()


# --- checks and explain -------------------------------------------------------------------


def test_the_catalogue_and_the_registry_agree():
    # One list of checks: the spec's ids, the registry and the explanations follow it.
    assert [entry.id for entry in CATALOGUE] == list(SUMMARIES) == list(CHECK_IDS)
    assert list(REGISTRY) == list(CHECK_IDS)
    assert set(EXPLANATIONS) == set(CHECK_IDS)
    for entry in CATALOGUE:  # each entry's class is the check of that id
        check = get_check(entry.id)
        assert check.id == entry.id
        assert f"{type(check).__module__}:{type(check).__name__}" == entry.implementation
    assert f"over a batch of {BATCH} " in SUMMARIES["vmap"]  # the description says vmap's batch


def test_explaining_a_lint_rule_does_not_import_torch():
    completed = run_python_cli(["explain", "GV103"])
    assert "torch imported: False exit: 0" in completed.stderr
    assert completed.stdout.startswith(f"GV103 (check lint): {RULES['GV103'][0]}")


def test_gradverify_checks_lists_every_id_in_order():
    result = invoke("checks")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(CHECK_IDS)
    assert lines[CHECK_IDS.index("gradcheck")].endswith(SUMMARIES["gradcheck"])


@pytest.mark.parametrize("check", CHECK_IDS)
def test_explain_a_check(check):
    result = invoke("explain", check)
    assert result.exit_code == 0
    assert result.stdout.startswith(f"{check}: {SUMMARIES[check]}\n\n")
    assert EXPLANATIONS[check] in result.stdout


def test_explain_a_lint_rule():
    result = invoke("explain", "gv103")
    assert result.exit_code == 0
    title, remedy = RULES["GV103"]
    assert result.stdout.startswith(f"GV103 (check lint): {title}")
    assert remedy in result.stdout


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("gradchek", "no check or topic 'gradchek' (did you mean 'gradcheck'?)"),
        ("surogate", "no check or topic 'surogate' (did you mean 'surrogate'?)"),
        ("aproximate", "no check or topic 'aproximate' (did you mean 'approximate'?)"),
        ("wasted-wrk", "no check or topic 'wasted-wrk' (did you mean 'wasted_work'?)"),
        ("GV199", "no lint rule 'GV199'"),
    ],
)
def test_explain_something_unknown(name, words):
    result = invoke("explain", name)
    assert result.exit_code == ExitCode.USAGE
    assert words in result.stderr
    assert result.stdout == ""


def test_explain_unknown_lists_the_topics():
    result = invoke("explain", "nothing-like-it")
    assert result.exit_code == ExitCode.USAGE
    assert "(did you mean" not in result.stderr
    assert f"the topics are {', '.join(TOPICS)}" in result.stderr


def test_topics_aliases_and_checks_do_not_collide():
    assert not set(TOPICS) & set(CHECK_IDS)
    assert not set(ALIASES) & {*TOPICS, *CHECK_IDS}
    assert set(ALIASES.values()) <= {*TOPICS, *CHECK_IDS}


@pytest.mark.parametrize("topic", ["surrogate", "approximate", "kinks"])
def test_explain_a_topic(topic):
    result = invoke("explain", topic)
    assert result.exit_code == 0, result.output
    summary, text = TOPICS[topic]
    assert result.stdout == f"{topic}: {summary}\n\n{text}\n"


@pytest.mark.parametrize(
    ("name", "explained"),
    [
        ("wasted_work", "layouts"),
        ("non_contiguous", "layouts"),
        ("requires_grad_off", "layouts"),
        ("needs_input_grad", "layouts"),
        ("Finite-Difference", "finite_difference"),
        ("max_error", "approximate"),
        ("Kinks", "kinks"),
    ],
)
def test_explain_finds_a_name_as_users_meet_it(name, explained):
    result = invoke("explain", name)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{explained}: ")


def test_explain_layouts_covers_each_variant():
    text = invoke("explain", "layouts").stdout
    sections = re.split(r"\n(?=\S)", text.split("\n\n", 2)[2])
    headings = [section.splitlines()[0] for section in sections if section.strip()]
    assert headings[:3] == [
        "non-contiguous (`variants: {non_contiguous: false}` turns it off)",
        "requires_grad off (`variants: {requires_grad_off: false}` turns it off)",
        "wasted work (`wasted_work: false` turns it off)",
    ]
    assert "ctx.needs_input_grad[i]" in text


def test_explain_lint_lists_every_rule_from_the_registry(monkeypatch):
    # A rule added to the registry is listed without touching the explanation.
    monkeypatch.setitem(RULES, "GV199", ("a rule added later", "do the right thing"))
    result = invoke("explain", "lint")
    assert result.exit_code == 0, result.output
    listed = re.findall(r"^  (GV\d{3})  (.*)$", result.stdout, re.M)
    assert listed == [(rule, title) for rule, (title, _) in RULES.items()]
    assert "Fix: do the right thing." in result.stdout
    assert result.stdout.startswith(f"lint: {SUMMARIES['lint']}\n\n{EXPLANATIONS['lint']}")


def test_explain_without_a_name_lists_every_check_and_topic():
    result = invoke("explain")
    assert result.exit_code == 0, result.output
    names = re.findall(r"^  (\S+)  ", result.stdout, re.M)
    assert names == [*CHECK_IDS, *TOPICS]


@pytest.mark.parametrize(
    "arguments",
    [
        ["checks"],
        ["explain"],
        ["explain", "gradgradcheck"],
        ["explain", "kinks"],
        ["explain", "surrogate"],
        ["explain", "approximate"],
        ["explain", "layouts"],
        ["explain", "--help"],
        ["init", "--help"],
    ],
)
def test_checks_explain_and_init_help_do_not_import_torch(arguments):
    completed = run_python_cli(arguments)
    assert "torch imported: False exit: 0" in completed.stderr, completed.stderr


def run_python_cli(arguments: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    program = (
        "import sys\n"
        "from gradverify.cli import main\n"
        f"sys.argv = ['gradverify', *{arguments!r}]\n"
        "code = 0\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "print('torch imported:', 'torch' in sys.modules, 'exit:', code, file=sys.stderr)\n"
    )
    environment = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-c", program],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )


# --- init ---------------------------------------------------------------------------------

ELEMENTWISE = """\
import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, power: int, scale=2.0, flags={"fast": True}):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x**3 * scale

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x**2 * ctx.scale, None, None, None
"""

LINEAR = """\
import torch


class MyLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        output = input @ weight.t()
        return output if bias is None else output + bias

    @staticmethod
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        grad_bias = grad_output.sum(0) if ctx.has_bias else None
        return grad_output @ weight, grad_output.t() @ input, grad_bias
"""

SOFTMAX = """\
import torch


class Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        y = torch.softmax(x, dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return y * (grad_output - (grad_output * y).sum(ctx.dim, keepdim=True)), None
"""

WRONG = ELEMENTWISE.replace("grad_output * 3 * x**2", "grad_output * 2 * x**2")

PICKY = """\
import torch


class Picky(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if x.shape != (5, 7):
            raise ValueError(f"x must be 5x7, got {tuple(x.shape)}")
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output
"""


@pytest.fixture
def module(tmp_path, monkeypatch):
    """`module(source)`: a fresh module in the cwd (a temporary project) and its name."""
    monkeypatch.chdir(tmp_path)

    def write(source: str) -> str:
        name = f"gv_init_{uuid.uuid4().hex[:8]}"  # fresh: modules stay cached across tests
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
        return name

    return write


def init(*arguments: str):
    return invoke("init", *arguments, "--no-isolation")


def test_init_writes_a_starter_spec_from_the_signature_and_tries_it(module, validator):
    name = module(ELEMENTWISE)
    result = init(f"{name}:Cube")
    assert result.exit_code == ExitCode.OK, result.output
    path = Path("specs/cube.yaml")
    text = path.read_text(encoding="utf-8")
    assert f"wrote {path}" in result.stdout and text in result.stdout
    assert "passes. Now make it yours" in result.stdout
    [entry] = load_spec_file(path)
    inputs = entry.spec.cases[0].inputs
    assert inputs[0].shape == [4]  # x: no default, no annotation: a tensor
    assert inputs[1] == 1  # power: int without default: a placeholder ...
    assert "# power: a number (int, no default: choose a value)" in text  # ... said to be one
    assert inputs[2] == 2.0  # forward's defaults as they are
    assert inputs[3].value == {"fast": True}  # a mapping stays a literal
    assert validator.is_valid(spec_data(path))


def test_init_finds_linear_shapes(module):
    name = module(LINEAR)
    result = init(f"{name}:MyLinear", "--output", "specs/linear.yaml")
    assert result.exit_code == ExitCode.OK, result.output
    [entry] = load_spec_file("specs/linear.yaml")
    shapes = [item.shape for item in entry.spec.cases[0].inputs[:2]]
    assert shapes == [[2, 4], [3, 4]]  # [4] and [4] run forward, but not backward
    assert entry.spec.cases[0].inputs[2] is None
    assert "bias: None by default" in Path("specs/linear.yaml").read_text(encoding="utf-8")
    assert entry.spec.cases[1].inputs[2].shape == [3]  # and a case that gives bias a tensor


def test_init_takes_conventional_scalar_names_for_scalars(module):
    name = module(SOFTMAX)
    result = init(f"{name}:Softmax")
    assert result.exit_code == ExitCode.OK, result.output
    [entry] = load_spec_file("specs/softmax.yaml")
    assert entry.spec.cases[0].inputs[1] == -1
    text = Path("specs/softmax.yaml").read_text(encoding="utf-8")
    assert "# dim: a number (by its name: choose a value)" in text


def test_init_on_a_wrong_backward_says_what_to_look_at(module):
    name = module(WRONG)
    result = init(f"{name}:Cube")
    assert result.exit_code == ExitCode.FAILED, result.output
    assert Path("specs/cube.yaml").is_file()
    assert "finite_difference, gradcheck failed, and the report above names" in result.stdout
    assert "`gradverify explain finite_difference`" in result.stdout


def test_init_when_forward_rejects_every_guess(module):
    name = module(PICKY)
    result = init(f"{name}:Picky")
    assert result.exit_code == ExitCode.FAILED, result.output
    assert "forward rejected every shape tried for x (ValueError: x must be 5x7" in result.stdout
    assert (
        "give the shapes (and dtypes, ranges) forward expects in specs/picky.yaml" in result.stdout
    )
    assert load_spec_file("specs/picky.yaml")  # written, valid, to be adjusted


def test_init_never_overwrites_without_force(module):
    name = module(ELEMENTWISE)
    Path("specs").mkdir()
    Path("specs/cube.yaml").write_text("# mine\n", encoding="utf-8")
    result = init(f"{name}:Cube")
    assert result.exit_code == ExitCode.USAGE
    assert "'specs/cube.yaml' exists" in result.stderr and "--force" in result.stderr
    assert Path("specs/cube.yaml").read_text(encoding="utf-8") == "# mine\n"
    assert init(f"{name}:Cube", "--force").exit_code == ExitCode.OK


def test_init_on_a_bad_target_is_one_clear_error(module):
    name = module(ELEMENTWISE)
    result = init(f"{name}:Cub")
    assert result.exit_code == ExitCode.USAGE
    assert "did you mean 'Cube'?" in result.stderr
    assert not Path("specs").exists()


def test_init_tries_the_spec_in_a_worker_process_by_default(module):
    name = module(ELEMENTWISE)
    result = invoke("init", f"{name}:Cube")
    assert result.exit_code == ExitCode.OK, result.output


# --- the docs' snippets (docs/authoring.md) -----------------------------------------------


def authoring_page() -> str:
    return (ROOT / "docs" / "authoring.md").read_text(encoding="utf-8")


def blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, re.DOTALL)


def readme_commands() -> list[list[str]]:
    [commands] = blocks(authoring_page(), "sh")
    return [shlex.split(line, comments=True) for line in commands.splitlines()]


def test_the_readme_authoring_commands(tmp_path, monkeypatch):
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    relu = ELEMENTWISE.replace("class Cube", "class ClippedReLU")
    fn = ELEMENTWISE.split("class Cube", 1)[1]
    (package / "ops.py").write_text(f"{relu}\n\nclass Fn{fn}", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for command in readme_commands():
        assert command[0] == "gradverify"
        arguments = command[1:]
        if ">" in arguments:  # `gradverify schema > gradverify.schema.json`
            arguments, target = arguments[: arguments.index(">")], arguments[-1]
        else:
            target = None
        if arguments[0] == "init":
            arguments.append("--no-isolation")
        result = invoke(*arguments)
        assert result.exit_code == 0, (command, result.output)
        if target:
            Path(target).write_text(result.stdout, encoding="utf-8")
    assert Path("specs/fn.yaml").is_file()  # the name the docs promise
    assert Path("specs/relu.yaml").is_file()
    assert json.loads(Path("gradverify.schema.json").read_text(encoding="utf-8")) == spec_schema()


def test_the_readme_editor_snippets(tmp_path):
    section = authoring_page()
    [spec] = blocks(section, "yaml")
    modeline = re.match(r"# yaml-language-server: \$schema=(\S+)\n", spec)
    assert modeline, "the spec snippet starts with the yaml-language-server modeline"
    # `gradverify schema > gradverify.schema.json` at the project root; the spec in specs/.
    (tmp_path / "gradverify.schema.json").write_text(json.dumps(spec_schema()), encoding="utf-8")
    (tmp_path / "specs").mkdir()
    spec_file = tmp_path / "specs" / "relu.yaml"
    spec_file.write_text(spec, encoding="utf-8")
    schema_file = (spec_file.parent / modeline.group(1)).resolve()
    assert schema_file == tmp_path / "gradverify.schema.json"
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    jsonschema.validate(yaml.safe_load(spec), schema)
    load_spec_file(spec_file)  # and gradverify reads it, modeline and all
    [settings] = blocks(section, "json")
    [(schema_path, globs)] = json.loads(settings)["yaml.schemas"].items()
    assert (tmp_path / schema_path).resolve() == schema_file
    assert spec_file in [file for pattern in globs for file in tmp_path.glob(pattern)]


TUTORIALS = [
    "LegendrePolynomial3", "MyReLU", "LinearFunction", "LinearSetupContext", "MulConstant",
    "ClippedReLU", "SwishFunction", "LearnableSwish", "LogSumExp",
]  # fmt: skip


@pytest.mark.parametrize("name", TUTORIALS)
def test_init_writes_a_passing_spec_for_every_tutorial_function(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = init(f"tests.functions.tutorials:{name}")
    assert result.exit_code == ExitCode.OK, result.output
    [path] = Path("specs").glob("*.yaml")
    [entry] = load_spec_file(path)  # loads back, and passed the trial above
    assert entry.spec.target == f"tests.functions.tutorials:{name}"


def test_init_says_why_a_parameter_is_a_number(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert init("tests.functions.tutorials:ClippedReLU").exit_code == ExitCode.OK
    text = Path("specs/clipped_relu.yaml").read_text(encoding="utf-8")
    assert "- 0.5" in text and "# clip_val: a number (forward uses it as one)" in text
    assert "# input: a tensor" in text
