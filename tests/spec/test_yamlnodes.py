"""load_yaml: safe parsing that remembers the 1-based line and column of every key and item."""

from __future__ import annotations

import pytest
import yaml

from gradverify.spec.yamlnodes import DuplicateKeyError, LoadedYaml, Position, load_yaml

SPEC = """\
target: pkg.mod:Attr
cases:
  - name: first
    inputs:
      - {shape: [2, 3]}
      - 2.5
"""


def test_data_is_the_plain_python_value() -> None:
    loaded = load_yaml(SPEC)

    assert loaded.data == {
        "target": "pkg.mod:Attr",
        "cases": [{"name": "first", "inputs": [{"shape": [2, 3]}, 2.5]}],
    }


@pytest.mark.parametrize(
    ("path", "line", "column"),
    [
        ((), 1, 1),
        (("target",), 1, 1),
        (("cases",), 2, 1),
        (("cases", 0), 3, 5),
        (("cases", 0, "name"), 3, 5),
        (("cases", 0, "inputs"), 4, 5),
        (("cases", 0, "inputs", 0), 5, 9),
        (("cases", 0, "inputs", 0, "shape"), 5, 10),
        (("cases", 0, "inputs", 0, "shape", 1), 5, 21),
        (("cases", 0, "inputs", 1), 6, 9),
    ],
)
def test_positions_are_one_based_and_point_at_keys_and_items(
    path: tuple[str | int, ...], line: int, column: int
) -> None:
    assert load_yaml(SPEC).positions[path] == Position(line, column)


def test_position_of_falls_back_to_the_closest_ancestor() -> None:
    loaded = load_yaml(SPEC)

    # A key pydantic complains about but that is not in the YAML (e.g. a missing one).
    assert loaded.position_of(("cases", 0, "inputs", 0, "dtype")) == Position(5, 9)
    assert loaded.position_of(("nowhere",)) == Position(1, 1)


def test_position_of_is_none_when_nothing_was_loaded() -> None:
    assert LoadedYaml(data=None, positions={}).position_of(("cases",)) is None


def test_empty_text_loads_as_none_without_positions() -> None:
    loaded = load_yaml("")

    assert loaded.data is None
    assert loaded.positions == {}


def test_duplicate_key_raises_at_the_second_key() -> None:
    text = "target: a:B\ncases:\n  - name: x\n    name: y\n"

    with pytest.raises(DuplicateKeyError) as caught:
        load_yaml(text)

    assert "duplicate key 'name'" in str(caught.value)
    assert caught.value.problem_mark is not None
    assert (caught.value.problem_mark.line + 1, caught.value.problem_mark.column + 1) == (4, 5)


def test_duplicate_key_error_is_a_yaml_error() -> None:
    with pytest.raises(yaml.MarkedYAMLError):
        load_yaml("a: 1\na: 2\n")


def test_merge_brings_in_the_anchored_keys() -> None:
    text = """\
base: &base {dtype: float32, low: 0}
input:
  <<: *base
  shape: [2]
"""
    loaded = load_yaml(text)

    assert loaded.data["input"] == {"dtype": "float32", "low": 0, "shape": [2]}
    assert "<<" not in loaded.data["input"]


def test_merge_keys_written_in_the_mapping_override_merged_ones() -> None:
    text = """\
base: &base {dtype: float32, low: 0}
input:
  <<: *base
  dtype: float64
"""
    loaded = load_yaml(text)

    assert loaded.data["input"] == {"dtype": "float64", "low": 0}
    # The position is that of the key that won, not of the anchored one.
    assert loaded.positions[("input", "dtype")] == Position(4, 3)


def test_merge_of_several_anchors_gives_the_first_precedence() -> None:
    text = """\
a: &a {x: 1, y: 1}
b: &b {x: 2, z: 2}
c:
  <<: [*a, *b]
"""
    assert load_yaml(text).data["c"] == {"x": 1, "y": 1, "z": 2}


def test_anchored_sequence_is_reused_by_alias() -> None:
    text = "a: &shape [2, 3]\nb: *shape\n"

    assert load_yaml(text).data == {"a": [2, 3], "b": [2, 3]}


@pytest.mark.parametrize(
    "text",
    [
        "a: !!python/object/apply:os.system ['echo hi']\n",
        "a: !!python/name:os.system\n",
        "a: !!python/object/new:dict {x: 1}\n",
        "a: [!!python/tuple [1, 2]]\n",
    ],
)
def test_python_tags_are_refused(text: str) -> None:
    with pytest.raises(yaml.constructor.ConstructorError) as caught:
        load_yaml(text)

    assert "could not determine a constructor" in str(caught.value)


def test_safe_collection_tags_are_constructed() -> None:
    assert load_yaml("a: !!set {p, q}\n").data == {"a": {"p", "q"}}


def test_scalars_are_typed_by_the_safe_resolver() -> None:
    text = "i: 3\nf: 1.5e-3\nb: true\nn: null\ns: '3'\n"

    assert load_yaml(text).data == {"i": 3, "f": 1.5e-3, "b": True, "n": None, "s": "3"}


def test_syntax_error_is_a_marked_yaml_error_with_its_line() -> None:
    with pytest.raises(yaml.MarkedYAMLError) as caught:
        load_yaml("a: [1, 2\nb: 3\n")

    assert caught.value.problem_mark is not None
    assert caught.value.problem_mark.line + 1 == 2
