"""Fuzzing the spec loader: random YAML documents and mutations of real specs either load or
raise our own error (exit 2 at the CLI): never another exception, never a hang.

Deterministic (derandomize=True): the same examples on every run, so CI cannot flake; a
failure prints the example to add as a regular test.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gradverify.cli import app
from gradverify.errors import GradverifyError
from gradverify.spec import CHECK_IDS, parse_spec

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted(
    path
    for path in [*ROOT.glob("specs/*.yaml"), *ROOT.glob("tests/specs/**/*.yaml")]
    if path.name != "hostile.yaml"  # Functions that crash their process: not for in-process runs
)
SEED_TEXTS = [path.read_text(encoding="utf-8") for path in SEEDS]
# Small specs whose Functions are quick, for the runs through the CLI.
CLI_SEED_TEXTS = [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("tests/specs/valid/*"))]

_SPEC_WORDS = (
    "target cases name inputs shape values dtype low high requires_grad device checks tolerance"
    " atol rtol eps seed mode timeout functions kinks gradient reference float64 float32 float16"
    " int64 bool complex128 cpu meta cuda exact auto true null"
)
WORDS = [
    *CHECK_IDS,
    *_SPEC_WORDS.split(),
    "tests.functions.correct:Square",
    "gradverify.examples.activations:ReLU",
    "no.such.module:Thing",
]
YAML_PUNCTUATION = "[]{}:,-&*!|>'\"#%@`?<\t\n "

LOADER = settings(
    max_examples=200,
    deadline=timedelta(seconds=5),  # the loader answers in milliseconds; this catches a hang
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def small_scalar() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(-3, 9).map(str), st.sampled_from(WORDS), st.sampled_from(["0.5", "-1e-3"])
    )


# Values and keys that once reached users as tracebacks, or that stress the caps.
TRICKY_SCALARS = [
    "~", "''", "2024-13-01", "2024-02-30 25:61:00", "0x", "0b", "!!binary x", "!!int x",
    "!!float y", "!!set {a}", "!!omap [a]", "!!python/tuple [1]", "*nowhere", "&a", "<<",
    "&x [*x]", "9" * 5000, "[" * 200 + "]" * 200, ".inf", ".nan", "-.inf", "1e400",
]  # fmt: skip
TRICKY_KEYS = ["[a, b]", "{a: 1}", "? [x]", "<<", "!!python/name:os.system", "~", "&k key", "*k"]


def any_scalar() -> st.SearchStrategy[str]:
    return st.one_of(
        small_scalar(),
        st.sampled_from(TRICKY_SCALARS),
        st.integers().map(str),
        st.floats().map(str),
        st.text(max_size=12),
    )


@st.composite
def mutated(draw: st.DrawFn, texts: list[str], scalar: st.SearchStrategy[str]) -> str:
    """A real spec with one to four line-level or token-level edits."""
    lines = draw(st.sampled_from(texts)).splitlines() or [""]
    for _ in range(draw(st.integers(1, 4))):
        lines = draw(st.sampled_from(EDITS))(draw, lines, scalar)
    text = "\n".join(lines) + "\n"
    if draw(st.integers(0, 4)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text


def _line(draw: st.DrawFn, lines: list[str]) -> int:
    return draw(st.integers(0, max(len(lines) - 1, 0)))


def delete(draw: st.DrawFn, lines: list[str], scalar: Any) -> list[str]:
    index = _line(draw, lines)
    return lines[:index] + lines[index + 1 :]


def duplicate(draw: st.DrawFn, lines: list[str], scalar: Any) -> list[str]:
    source, target = _line(draw, lines), _line(draw, lines)
    return [*lines[:target], lines[source] if lines else "", *lines[target:]]


def swap(draw: st.DrawFn, lines: list[str], scalar: Any) -> list[str]:
    if not lines:
        return lines
    first, second = _line(draw, lines), _line(draw, lines)
    swapped = list(lines)
    swapped[first], swapped[second] = swapped[second], swapped[first]
    return swapped


def replace_token(draw: st.DrawFn, lines: list[str], scalar: Any) -> list[str]:
    index = _line(draw, lines)
    tokens = list(re.finditer(r"[\w.:+-]+", lines[index])) if lines else []
    if not tokens:
        return lines
    token = draw(st.sampled_from(tokens))
    line = lines[index]
    edited = line[: token.start()] + draw(scalar) + line[token.end() :]
    return [*lines[:index], edited, *lines[index + 1 :]]


def insert_key(draw: st.DrawFn, lines: list[str], scalar: Any) -> list[str]:
    index = draw(st.integers(0, len(lines)))
    indent = " " * draw(st.sampled_from([0, 2, 4, 6, 8]))
    key = draw(
        st.one_of(
            st.sampled_from(WORDS),
            st.sampled_from(TRICKY_KEYS),
            st.text(string.ascii_letters, min_size=1),
        )
    )
    return [*lines[:index], f"{indent}{key}: {draw(scalar)}", *lines[index:]]


def insert_punctuation(draw: st.DrawFn, lines: list[str], scalar: Any) -> list[str]:
    index = _line(draw, lines)
    line = lines[index] if lines else ""
    at = draw(st.integers(0, len(line)))
    inserted = draw(st.text(YAML_PUNCTUATION, min_size=1, max_size=3))
    return [*lines[:index], line[:at] + inserted + line[at:], *lines[index + 1 :]]


EDITS: list[Callable[..., list[str]]] = [
    delete,
    duplicate,
    swap,
    replace_token,
    insert_key,
    insert_punctuation,
]

# Random documents: any YAML the safe dumper writes, shaped like a spec or not.
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(WORDS) | st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
documents = st.one_of(
    values.map(lambda value: yaml.safe_dump(value, default_flow_style=None)),
    st.fixed_dictionaries(
        {"target": st.sampled_from(WORDS), "cases": values}, optional={"checks": values}
    ).map(yaml.safe_dump),
    st.text(YAML_PUNCTUATION + string.ascii_letters + string.digits, max_size=80),
)


def loads_or_says_why(text: str) -> None:
    """The invariant: a list of entries, or a GradverifyError; anything else propagates."""
    try:
        entries = parse_spec(text, "fuzz.yaml")
    except GradverifyError as error:
        assert error.render().strip(), "an error must say something"
        return
    assert isinstance(entries, list)


def test_the_seed_specs_are_found() -> None:
    assert len(SEEDS) >= 20 and len(CLI_SEED_TEXTS) >= 3


@LOADER
@given(documents)
def test_random_documents(text: str) -> None:
    loads_or_says_why(text)


@LOADER
@given(mutated(SEED_TEXTS, any_scalar()))
def test_mutated_specs(text: str) -> None:
    loads_or_says_why(text)


@settings(
    max_examples=12,
    deadline=None,  # a run executes the Functions; the small scalars keep each one quick
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(mutated(CLI_SEED_TEXTS, small_scalar()))
def test_mutated_specs_through_the_cli(tmp_path_factory: Any, text: str) -> None:
    spec = tmp_path_factory.mktemp("fuzz") / "spec.yaml"
    spec.write_text(text, encoding="utf-8")

    result = CliRunner().invoke(
        app, ["check", str(spec), "--no-isolation", "--no-cache", "--format", "json"]
    )

    assert result.exit_code in (0, 1, 2), (text, result.output, result.exception)
    if result.exit_code == 2:
        assert "Traceback" not in result.output
