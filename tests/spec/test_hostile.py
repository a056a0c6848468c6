"""Hostile specs: alias bombs, deep nests, huge files and values end in a SpecError naming
file, line and the limit hit (exit 2 at the CLI), quickly, never a hang or a traceback."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gradverify.errors import SpecError, SpecIssue
from gradverify.spec import limits, load_spec_file, parse_spec
from gradverify.spec import load as load_module
from gradverify.spec.config import ConfigError, load_config
from gradverify.spec.yamlnodes import BASE_LOADERS, load_yaml

ROOT = Path(__file__).resolve().parents[2]
GRADVERIFY = Path(sys.executable).parent / "gradverify"


def alias_bomb() -> str:
    """Eight levels of nine aliases each: 600 bytes standing for 9^9 nodes."""
    lines = ["target: tests.functions.correct:Square", "a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        aliases = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    return "\n".join(lines) + "\n"


def merge_bomb() -> str:
    """The same blow-up through merge keys: each mapping merges nine copies of the last."""
    lines = ["m0: &m0 {k: 1}"]
    for level in range(1, 10):
        merged = ", ".join([f"*m{level - 1}"] * 9)
        lines.append(f"m{level}: &m{level} {{<<: [{merged}]}}")
    return "\n".join(lines) + "\n"


def deep_sequence(depth: int) -> str:
    return "target: x:Y\ncases:\n  - inputs: " + "[" * depth + "]" * depth + "\n"


def deep_mapping(depth: int) -> str:
    return "target: x:Y\ncases: " + "{a: " * depth + "1" + "}" * depth + "\n"


def only_issue(text: str, file: str = "hostile.yaml") -> SpecIssue:
    with pytest.raises(SpecError) as caught:
        parse_spec(text, file)
    assert len(caught.value.issues) == 1, caught.value.issues
    return caught.value.issues[0]


@pytest.fixture(params=BASE_LOADERS, ids=lambda base: base.__name__)
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type[Any]:
    """Each YAML reader PyYAML offers (libyaml's and pure Python): the caps are ours on both."""
    base: type[Any] = request.param
    monkeypatch.setattr(load_module, "load_yaml", functools.partial(load_yaml, base=base))
    return base


@pytest.mark.usefixtures("reader")
@pytest.mark.parametrize(
    ("text", "line", "limit"),
    [
        (alias_bomb(), 2, limits.ALIASES),  # where the expansion passed the cap: inside a0
        (merge_bomb(), 6, limits.ALIASES),  # m5 merges 9 x 9^4 pairs: 59,049 > 50,000
        ("a: &a [*a]\n", 1, limits.DEPTH),  # an anchor inside itself
        (deep_sequence(5000), 3, limits.DEPTH),
        (deep_mapping(5000), 2, limits.DEPTH),
        ("target: [" + ", ".join(["1"] * 60_000) + "]\n", 1, limits.NODES),
        ('target: "' + "x" * 100_000 + '"\ncases: []\n', 1, limits.SCALAR),
    ],
    ids=["alias_bomb", "merge_bomb", "self_alias", "deep_list", "deep_map", "nodes", "scalar"],
)
def test_a_capped_document_names_line_and_limit(text: str, line: int, limit: limits.Limit) -> None:
    issue = only_issue(text)

    assert (issue.file, issue.line) == ("hostile.yaml", line)
    assert limit.describe() in issue.message
    assert f"{limit.name} limit" in issue.render()


def test_brackets_inside_values_are_not_nesting(reader: type[Any]) -> None:
    # A quoted value, and a plain one, holding more brackets than the depth cap allows.
    brackets = "[" * (limits.MAX_DEPTH + 10)
    text = f"quoted: '{brackets}'\nplain: a{brackets}\nafter: [1, [2]]\n"

    loaded = load_yaml(text, base=reader)

    assert loaded.data == {"quoted": brackets, "plain": f"a{brackets}", "after": [1, [2]]}


@pytest.mark.usefixtures("reader")
def test_a_nest_past_libyamls_own_limit_stops_at_ours() -> None:
    # libyaml refuses flow nests of 1,000 levels itself, and pure Python scans all of them
    # before composing: both must answer with gradverify's cap, on the line of the bracket.
    text = "target: x:Y\ncases:\n  - name: c\n    inputs: " + "[\n" * 3000 + "]" * 3000 + "\n"

    issue = only_issue(text)

    assert limits.DEPTH.describe() in issue.message
    assert issue.line == 4 + limits.MAX_DEPTH - 3  # the bracket past the cap (3 levels above)


def test_depth_within_the_cap_loads() -> None:
    # A 10-d literal tensor in a case: about 16 levels, well inside the cap.
    values = "[" * 10 + "1.0" + "]" * 10
    text = f"target: x:Y\ncases:\n  - name: c\n    inputs:\n      - {{values: {values}}}\n"

    [entry] = parse_spec(text, "deep_but_fine.yaml")

    assert entry.spec.cases[0].inputs[0].values == [[[[[[[[[[1.0]]]]]]]]]]  # type: ignore[union-attr]


def test_aliases_a_real_spec_uses_still_load() -> None:
    text = """\
target: tests.functions.correct:Square
cases:
  - {name: a, inputs: [&vector {shape: [3], low: -1.0, high: 1.0}]}
  - {name: b, inputs: [*vector]}
"""
    [entry] = parse_spec(text, "aliases.yaml")

    assert entry.spec.cases[0].inputs == entry.spec.cases[1].inputs


def test_a_file_larger_than_the_cap_is_refused_unread(tmp_path: Path) -> None:
    file = tmp_path / "huge.yaml"
    file.write_text("# filler\n" * (limits.MAX_SPEC_BYTES // 9 + 1), encoding="utf-8")

    with pytest.raises(SpecError) as caught:
        load_spec_file(file)

    [issue] = caught.value.issues
    assert issue.file == str(file)
    assert "refused unread" in issue.message
    assert limits.SIZE.describe() in issue.message


def test_text_larger_than_the_cap_is_refused() -> None:
    issue = only_issue("#" * (limits.MAX_SPEC_BYTES + 1))

    assert limits.SIZE.describe() in issue.message


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("? [a, b]\n: 1\n", 1, "a key must be a plain value, found a list"),
        ("{{a: 1}: 2}\n", 1, "a key must be a plain value, found a mapping"),
        ("target: 2024-13-01\ncases: []\n", 1, "month must be in 1..12"),
        ("target: x:Y\ncases: []\nseed: " + "9" * 5000 + "\n", 3, "digits"),
    ],
    ids=["list_key", "mapping_key", "bad_timestamp", "huge_integer"],
)
def test_values_the_safe_constructor_chokes_on_are_spec_errors(
    text: str, line: int, fragment: str
) -> None:
    issue = only_issue(text)

    assert issue.line == line
    assert fragment in issue.message


def test_a_file_that_is_not_utf8_names_the_byte(tmp_path: Path) -> None:
    file = tmp_path / "binary.yaml"
    file.write_bytes(b"target: x:Y\ncases: [\xff]\n")

    with pytest.raises(SpecError) as caught:
        load_spec_file(file)

    [issue] = caught.value.issues
    assert (issue.line, issue.column) == (2, 9)
    assert "not UTF-8" in issue.message and "0xff" in issue.message


def test_a_deeply_nested_pyproject_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.gradverify]\nmode = " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8"
    )

    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)

    assert "nested too deeply" in caught.value.render()


# The issue's hostile files through the installed console script, as a pre-commit hook runs it.


def check(file: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [str(GRADVERIFY), "check", str(file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=environment,
        timeout=30,  # a hang guard only: the caps answer in well under a second
    )


@pytest.mark.parametrize(
    ("text", "line", "limit"),
    [(alias_bomb(), 2, limits.ALIASES), (deep_sequence(5000), 3, limits.DEPTH)],
    ids=["alias_bomb", "deep_nesting"],
)
def test_the_cli_refuses_hostile_yaml_with_exit_2(
    tmp_path: Path, text: str, line: int, limit: limits.Limit
) -> None:
    file = tmp_path / "hostile.yaml"
    file.write_text(text, encoding="utf-8")

    completed = check(file)

    assert completed.returncode == 2, completed.stderr
    assert f"{file}:{line}:" in completed.stderr
    assert limit.describe() in completed.stderr
    assert "Traceback" not in completed.stderr
