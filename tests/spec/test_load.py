"""parse_spec / load_spec_file: validated specs, or SpecErrors located by file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradverify.errors import SpecError, SpecIssue
from gradverify.spec import (
    CHECK_IDS,
    LiteralInput,
    TensorInput,
    Tolerance,
    load_spec_file,
    parse_spec,
)

SPECS = Path(__file__).resolve().parent.parent / "specs"
VALID = SPECS / "valid"
INVALID = SPECS / "invalid"


def only_issue(path: Path) -> SpecIssue:
    with pytest.raises(SpecError) as caught:
        load_spec_file(path)
    assert len(caught.value.issues) == 1, caught.value.issues
    issue = caught.value.issues[0]
    assert issue.file == str(path)
    return issue


# file, line, column, key path, a fragment of the message that is the point of the check
INVALID_SPECS = [
    ("unknown_key.yaml", 5, 10, "cases[0].inputs[0].shap", "did you mean 'shape'?"),
    ("unknown_check.yaml", 2, 19, "checks[1]", "did you mean 'gradcheck'?"),
    ("bad_dtype.yaml", 6, 9, "cases[0].inputs[0].dtype", "did you mean 'float64'?"),
    ("ragged_values.yaml", 5, 9, "cases[0].inputs[0]", "ragged"),
    ("shape_and_values.yaml", 5, 9, "cases[0].inputs[0]", "exactly one of `shape` or `values`"),
    ("low_not_below_high.yaml", 5, 9, "cases[0].inputs[0]", "must be less than `high`"),
    ("missing_cases.yaml", 1, 1, "cases", "missing required key 'cases'"),
    ("duplicate_case_names.yaml", 2, 1, "cases", "case name 'vector' is used twice"),
    (
        "second_function_unknown_key.yaml",
        9,
        26,
        "functions[1].cases[0].inputs[1].dtyp",
        "did you mean 'dtype'?",
    ),
    ("syntax_error.yaml", 4, 13, "", "the `[` opened here is never closed"),
    ("duplicate_key.yaml", 5, 5, "", "duplicate key 'name'"),
    ("empty.yaml", 1, 1, "", "found an empty file"),
    ("top_level_list.yaml", 1, 1, "", "found a list"),
    ("python_tag.yaml", 6, 9, "", "could not determine a constructor"),
]


@pytest.mark.parametrize(
    ("name", "line", "column", "key_path", "message"),
    INVALID_SPECS,
    ids=[row[0] for row in INVALID_SPECS],
)
def test_invalid_spec_is_located(
    name: str, line: int, column: int, key_path: str, message: str
) -> None:
    issue = only_issue(INVALID / name)

    assert (issue.line, issue.column, issue.key_path) == (line, column, key_path)
    assert message in issue.message


def test_every_invalid_fixture_is_covered() -> None:
    assert sorted(path.name for path in INVALID.iterdir()) == sorted(
        row[0] for row in INVALID_SPECS
    )


def test_unknown_key_lists_the_valid_keys() -> None:
    issue = only_issue(INVALID / "unknown_key.yaml")

    assert issue.message.startswith("unknown key 'shap'")
    for key in ("shape", "values", "dtype", "low", "high", "requires_grad", "device"):
        assert key in issue.message


def test_unknown_key_in_a_case_suggests_case_keys() -> None:
    text = "target: a:B\ncases:\n  - name: x\n    input: []\n"

    with pytest.raises(SpecError) as caught:
        parse_spec(text, "s.yaml")

    (issue,) = caught.value.issues
    assert (issue.line, issue.column, issue.key_path) == (4, 5, "cases[0].input")
    assert "did you mean 'inputs'?" in issue.message


def test_unknown_top_level_key_suggests_nothing_when_nothing_is_close() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec("target: a:B\nzzzzzz: 1\ncases: [{name: x}]\n", "s.yaml")

    (issue,) = caught.value.issues
    assert issue.key_path == "zzzzzz"
    assert "did you mean" not in issue.message
    assert (
        "valid keys: cases, checks, device, expected_gradient, explore, extra_checks, gradient,"
        in issue.message
    )


def test_every_problem_is_reported_not_only_the_first() -> None:
    text = """\
target: a:B
checks: [forwad]
cases:
  - name: x
    inputs: [{shape: [2], dtype: flot32}]
"""
    with pytest.raises(SpecError) as caught:
        parse_spec(text, "s.yaml")

    assert [issue.key_path for issue in caught.value.issues] == [
        "checks[0]",
        "cases[0].inputs[0].dtype",
    ]


def test_spec_error_renders_file_line_column_and_key() -> None:
    path = INVALID / "unknown_key.yaml"

    with pytest.raises(SpecError) as caught:
        load_spec_file(path)

    assert caught.value.render().startswith(f"{path}:5:10: cases[0].inputs[0].shap: unknown key")


def test_python_tag_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    text = f"""\
target: a:B
cases:
  - name: x
    inputs:
      - !!python/object/apply:os.system ["touch {marker}"]
"""
    with pytest.raises(SpecError):
        parse_spec(text, "s.yaml")

    assert not marker.exists()


def test_python_tag_on_a_value_that_must_be_a_string_is_refused_as_yaml() -> None:
    text = 'target: !!python/object/apply:os.system ["echo hi"]\ncases: [{name: x}]\n'

    with pytest.raises(SpecError) as caught:
        parse_spec(text, "s.yaml")

    (issue,) = caught.value.issues
    assert (issue.line, issue.column) == (1, 9)
    assert "could not determine a constructor" in issue.message


def test_unreadable_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec_file(tmp_path / "missing.yaml")

    (issue,) = caught.value.issues
    assert issue.line is None
    assert issue.message.startswith("cannot read spec")


@pytest.mark.parametrize(
    ("target", "accepted"),
    [
        ("pkg.mod:Attr", True),
        ("path/to/file.py:Outer.Inner", True),
        ("pkg.mod", False),
        ("pkg.mod:", False),
        (":Attr", False),
    ],
)
def test_target_must_name_a_module_and_an_attribute(target: str, accepted: bool) -> None:
    text = f"target: '{target}'\ncases: [{{name: x}}]\n"

    if accepted:
        assert parse_spec(text, "s.yaml")[0].spec.target == target
    else:
        with pytest.raises(SpecError) as caught:
            parse_spec(text, "s.yaml")
        assert caught.value.issues[0].key_path == "target"


def test_requires_grad_on_an_integer_tensor_is_refused() -> None:
    text = """\
target: a:B
cases:
  - name: x
    inputs: [{shape: [2], dtype: int64, requires_grad: true}]
"""

    with pytest.raises(SpecError) as caught:
        parse_spec(text, "s.yaml")

    assert "requires_grad is only possible" in caught.value.issues[0].message


def test_defaults() -> None:
    (entry,) = load_spec_file(VALID / "square.yaml")
    spec = entry.spec

    assert spec.target == "tests.functions.correct:Square"
    assert spec.checks is None  # not written: every check that applies
    assert spec.checks_for(custom_op=False) == [  # `compile` is opt-in (docs/benchmarks.md)
        c for c in CHECK_IDS if c not in ("expected_gradient", "reference", "compile")
    ]
    assert spec.mode == "auto"
    assert spec.timeout == 120.0
    assert spec.tolerance == Tolerance(eps=1e-6, atol=1e-5, rtol=1e-3, nondet_tol=0.0)
    assert spec.seed == 0
    assert spec.gradient == "exact"
    (tensor,) = spec.cases[0].inputs
    assert tensor == TensorInput(
        shape=[5], dtype="float64", low=-1.0, high=1.0, requires_grad=None, device="cpu"
    )
    assert tensor.wants_grad


def test_entry_records_file_line_and_case_lines() -> None:
    (entry,) = load_spec_file(VALID / "square.yaml")

    assert entry.file == str(VALID / "square.yaml")
    assert entry.line == 2  # the comment on line 1 is not the spec
    assert entry.case_lines == {"vector": 4}


def test_several_functions_each_keep_their_own_settings() -> None:
    entries = load_spec_file(VALID / "several_functions.yaml")

    assert [entry.spec.target for entry in entries] == [
        "tests.functions.correct:Mul",
        "tests.functions.correct:MatMul",
        "tests.functions.correct:Scale",
    ]
    mul, matmul, scale = (entry.spec for entry in entries)
    assert mul.checks == ["forward", "backward"]
    assert matmul.tolerance == Tolerance(atol=1e-7, rtol=1e-4)
    assert (mul.seed, matmul.seed, scale.seed) == (0, 7, 0)
    assert [entry.line for entry in entries] == [3, 8, 16]
    assert [entry.case_lines for entry in entries] == [
        {"pair": 6},
        {"square": 12, "tall": 14},
        {"by_two": 18},
    ]


def test_merge_override_gives_a_tensor_with_the_overridden_key() -> None:
    (entry,) = load_spec_file(VALID / "anchors.yaml")
    same, overridden = entry.spec.cases

    assert same.inputs[0] == same.inputs[1]
    assert overridden.inputs[0].low == -2.0
    assert overridden.inputs[1].low == 0.5
    assert overridden.inputs[1].high == 2.0


def test_yml_suffix_and_literals_after_tensors() -> None:
    (entry,) = load_spec_file(VALID / "literals.yml")
    rows, last = entry.spec.cases

    assert rows.inputs[0].values == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert rows.inputs[0].dims == [2, 3]
    assert rows.inputs[1] == 1
    assert last.inputs[0].dtype == "float32"
    assert last.inputs[1] == -1


def test_mapping_under_value_is_a_literal() -> None:
    text = "target: a:B\ncases:\n  - name: x\n    inputs: [{value: {a: 1}}, {value: [1, 2]}]\n"

    (entry,) = parse_spec(text, "s.yaml")

    assert entry.spec.cases[0].inputs == [
        LiteralInput(value={"a": 1}),
        LiteralInput(value=[1, 2]),
    ]


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("3", 3),
        ("2.5", 2.5),
        ("-1", -1),
        ("true", True),
        ("mean", "mean"),
        ("'3'", "3"),
        ("null", None),
        ("[1, 2]", [1, 2]),
        ("[[1, 2], [3]]", [[1, 2], [3]]),
    ],
)
def test_plain_literals_stay_as_written(written: str, expected: object) -> None:
    text = f"target: a:B\ncases:\n  - name: x\n    inputs:\n      - {written}\n"

    (entry,) = parse_spec(text, "s.yaml")

    (literal,) = entry.spec.cases[0].inputs
    assert literal == expected
    assert type(literal) is type(expected)


def test_dtype_prefix_torch_is_accepted() -> None:
    text = "target: a:B\ncases:\n  - name: x\n    inputs: [{shape: [2], dtype: torch.float32}]\n"

    (entry,) = parse_spec(text, "s.yaml")

    assert entry.spec.cases[0].inputs[0].dtype == "float32"


def test_case_without_inputs_is_allowed() -> None:
    (entry,) = parse_spec("target: a:B\ncases: [{name: nothing}]\n", "s.yaml")

    assert entry.spec.cases[0].inputs == []


def test_targetless_spec_is_valid() -> None:
    (entry,) = parse_spec("cases: [{name: x, inputs: [{shape: [2]}]}]\n", "s.yaml")

    assert entry.spec.target is None


def test_empty_functions_list_is_refused() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec("functions: []\n", "s.yaml")

    assert caught.value.issues[0].key_path == "functions"


@pytest.mark.parametrize(
    ("text", "line", "column", "expected"),
    [
        ("target: x:Y\ncases: []\n", 2, 1, "`cases:` is empty: give at least one case"),
        ("target: x:Y\ncases:\n\t- name: a\n", 3, 1, "a tab character; YAML indents with spaces"),
        ("target: x:Y\ncases:\n  - name: a\n\t  inputs: []\n", 4, 1, "a tab character"),
        ("target: 'x:Y\ncases: []\n", 1, 9, "the quote opened here is never closed"),
        ("target: 3\ncases: []\n", 1, 1, "`target:` must be text, found the number 3"),
        ("target: x:Y\nseed: abc\ncases: []\n", 2, 1, "`seed:` must be a whole number"),
        ("target: x:Y\ncases: {a: 1}\n", 2, 1, "`cases:` must be a list, found a mapping"),
    ],
    ids=["empty_cases", "tab", "tab_after_spaces", "unclosed_quote", "number", "seed", "mapping"],
)
def test_messages_speak_gradverifys_words(text: str, line: int, column: int, expected: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(text, "words.yaml")

    issue = next(issue for issue in caught.value.issues if issue.line == line)
    assert issue.column == column
    assert expected in issue.message
    for leaked in ("Input should", "after validation", "cannot start any token"):
        assert all(leaked not in issue.message for issue in caught.value.issues)
