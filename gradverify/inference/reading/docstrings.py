"""What a Function's docstrings say of its parameters, the ways real packages write it:

- a parameter's entry: `x: ...`, numpy-style `x : (N, C) tensor` with the description
  indented below, google-style `x (Tensor): shape (N, C)`, `:param x: ...`;
- its shape: `(N, C)`, `[B, N, 9]`, `Tensor[N, 3]`, `(2,)` or `(N)` for a vector, `()` or
  the word `scalar` for a 0-d tensor; named dims are shared across parameters by name, and
  `K odd` asks for an odd size;
- never a range of values for a shape: `in [0, num_segments)`, `in [0, 1]`, `between (0, 1)`;
- a constant: `constant`, `fixed`, `buffer`, `frozen`, `receives no gradient`: a tensor
  that is not differentiated;
- the structure its words ask for (`symmetric positive definite`, `lower-triangular`);

Importing this module never imports torch.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

# Words of a docstring entry about a parameter, and the structure each asks for.
STRUCTURE_WORDS = (
    (re.compile(r"positive[- ](semi-?)?definite|\bS?PS?D\b|covariance", re.I), "spd"),
    (re.compile(r"lower[- ]triangular|cholesky factor", re.I), "lower"),
    (re.compile(r"upper[- ]triangular", re.I), "upper"),
    (re.compile(r"\bsymmetric\b|\bhermitian\b", re.I), "symmetric"),
    (re.compile(r"orthogonal|orthonormal|rotation matri", re.I), "orthogonal"),
    (re.compile(r"probabilit|simplex|sums? to (one|1)", re.I), "simplex"),
    (re.compile(r"\b(strictly )?positive\b(?! definite)", re.I), "positive"),
)
DIM_TOKEN = re.compile(
    r"\*?[A-Za-z_]\w{0,11}|\d+|\.\.\."
    r"|(?:\d+\s*\*\s*)?[A-Za-z_]\w{0,11}\s*(?://|/|\*|\+|-)\s*\d+"  # H/2, 2*N, T-1
    r"|\d+\s*\*\s*[A-Za-z_]\w{0,11}"
)
# A bracketed group: `(` not right after a word (`f(t, y)` is a call), `[` anywhere
# (`Tensor[N, 3]`); the brackets may not match (`[0, n)`: a range, told apart below).
BRACKETED = re.compile(r"(?:(?<![\w.])\(|\[)([^()\[\]]*)[\)\]]")
# Words before a bracket that make it a range of values, not a shape.
RANGE_BEFORE = re.compile(r"\b(in|range|between|within|interval|from|values?|domain)\W*$", re.I)
SHAPE_BEFORE = re.compile(r"\b(shape|shaped|size|sized|dims?|dimensions?)\b[^.;]{0,10}$", re.I)
# A lone dim without a trailing comma (`(N)`, `[K]`): short capitals, as shapes are written,
# never a word such as `(Tensor)` or `(optional)`.
LONE_DIM = re.compile(r"[A-Z][A-Z0-9_]?")
SCALAR_WORDS = re.compile(r"\b(scalar|0-d|0-dim\w*|zero-dim\w*|0d)\b", re.I)
CONSTANT_WORDS = re.compile(
    r"\bconstant\b|\bbuffer\b|\bfrozen\b|\bnon-?learn(ed|able)\b|\bnot (learn(ed|able)|trained)\b"
    r"|\bfixed\b(?![- ](size|point|length|shape|number|rank))|\bno grad(ient)?s?\b"
    r"|\breceives? no grad|\bnot differentiated\b|\brequires_grad\W+false\b",
    re.I,
)
# Words of an entry that make the parameter an integer tensor (`segment_ids: [N] int64`):
# dtypes, never `indices` (`weight[indices]` reads as weight's entry).
INTEGER_WORDS = re.compile(
    r"\bu?int(?:8|16|32|64)\b|\btorch\.long\b|\b(?:Long|Int)Tensor\b|\bintegers?\b"
    r"(?! (?:number|count|size|scalar))"
)
ODD = re.compile(r"\b([A-Za-z_]\w{0,11})\s+(?:is\s+|must\s+be\s+)?odd\b")


@dataclass(frozen=True)
class Documented:
    """What a docstring entry says of one parameter; `line` is its first line."""

    line: str
    dims: tuple[str, ...] | None = None  # ("N", "C"); () for a 0-d tensor
    loose: bool = False  # only a word (`scalar`) gave the shape: a number would do too
    odd: frozenset[str] = frozenset()  # named dims whose size must be odd (`K odd`)
    structure: str | None = None
    constant: bool = False  # receives no gradient: requires_grad false
    integer: bool = False  # an integer tensor by its words (int64, LongTensor, integer)


def docstrings(function_class: Any, *methods: Any) -> list[str]:
    """The docstrings of the Function's own classes (a buggy twin's parent's too, never
    torch's) and of its methods, each cleaned of its indentation."""
    classes = inspect.getmro(function_class) if isinstance(function_class, type) else ()
    owners = [vars(c).get("__doc__") for c in classes if not c.__module__.startswith("torch")]
    owners += [getattr(method, "__doc__", None) for method in methods]
    return [inspect.cleandoc(doc) for doc in owners if isinstance(doc, str)]


def documented(texts: Sequence[str], parameters: Sequence[str]) -> dict[str, Documented]:
    """Each parameter a docstring has an entry for, and what the entry says."""
    found: dict[str, Documented] = {}
    for text in texts:
        for name, entry in _entries(text, parameters):
            said = _read(entry)
            stated = said.dims is not None or said.structure or said.constant or said.integer
            if name not in found and stated:
                found[name] = said
    return found


def bounding(texts: Sequence[str], parameters: Sequence[str]) -> frozenset[str]:
    """The parameters the docstrings name as the end of an index range (`each in [0,
    num_segments)`, `values < n_classes`): counts that index values must stay under."""
    names = "|".join(re.escape(name) for name in parameters)
    if not names:
        return frozenset()
    bound = re.compile(rf"\[\s*0\s*,\s*`*({names})`*\s*\)|<\s*`*({names})`*\b")
    found = {m.group(1) or m.group(2) for text in texts for m in bound.finditer(text)}
    return frozenset(found)


def _entries(text: str, parameters: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(parameter, its entry): the line that starts with it and the lines indented below; or,
    where a line lists several (`fine: [B, C, H, W], coarse: [B, C, H/2, W/2]`), each its part
    of the line, from its name to the next parameter's."""
    lines = text.splitlines()
    names = "|".join(re.escape(name) for name in parameters)
    for at, line in enumerate(lines):
        for name in parameters:
            if not re.match(rf"\s*(?::param\s+(?:\w+\s+)?)?{re.escape(name)}\b\s*[:(\[]", line):
                listed = re.search(rf"[,;]\s*{re.escape(name)}\s*:", line)
                if listed is not None:
                    part = line[listed.end() :]
                    after = re.search(rf"[,;]\s*(?:{names})\s*:", part)
                    yield name, f"{name}:{part[: after.start()] if after else part}"
                continue
            listed_after = re.search(rf"[,;]\s*(?:{names})\s*:", line)
            if listed_after is not None:  # `x: [N, D] values; a: [D] positive`: x's part
                yield name, line[: listed_after.start()]
                continue
            indent = len(line) - len(line.lstrip())
            entry = [line]
            for below in lines[at + 1 :]:
                if not below.strip() or len(below) - len(below.lstrip()) <= indent:
                    break
                entry.append(below)
            yield name, "\n".join(entry)


def _read(entry: str) -> Documented:
    line = entry.splitlines()[0].strip()
    dims = _shape(entry)
    loose = dims is None and bool(SCALAR_WORDS.search(entry))
    odd = frozenset(ODD.findall(entry)) & frozenset(dims or ())
    structure = next((s for pattern, s in STRUCTURE_WORDS if pattern.search(entry)), None)
    constant = bool(CONSTANT_WORDS.search(entry))
    integer = bool(INTEGER_WORDS.search(entry))
    return Documented(line, () if loose else dims, loose, odd, structure, constant, integer)


def _shape(entry: str) -> tuple[str, ...] | None:
    """The first bracketed group of the entry that is a shape, not a range of values."""
    for bracket in BRACKETED.finditer(entry):
        before = entry[max(0, bracket.start() - 24) : bracket.start()]
        text = bracket.group(0)
        if (text[0], text[-1]) not in (("(", ")"), ("[", "]")) or RANGE_BEFORE.search(before):
            continue  # `[0, n)`, `in [0, 1]`: the values' range
        inner = bracket.group(1).strip()
        if not inner:
            if text == "()":
                return ()
            continue
        tokens = [t for t in re.split(r"\s*[,×]\s*", inner) if t]
        if not tokens or not all(DIM_TOKEN.fullmatch(t) for t in tokens) or "0" in tokens:
            continue
        lone = len(tokens) == 1 and not inner.endswith(",")
        if lone and not (LONE_DIM.fullmatch(tokens[0]) or SHAPE_BEFORE.search(before)):
            continue  # `(Tensor)`, `(optional)`, `(3)`: words or a reference, no shape
        return tuple(tokens)
    return None
