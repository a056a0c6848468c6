"""What probe.py wrote: one recorded call per distinct (target, signature), read back in the
order first seen, across every process of the run."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RecordedTensor:
    """A tensor argument as recorded: no data, except a small integer or bool tensor's values."""

    shape: tuple[int, ...]
    dtype: str
    requires_grad: bool
    low: float | None = None  # min over the tensor (or a strided sample of it)
    high: float | None = None
    values: Any = None
    repeats: bool | None = None  # integer tensors: whether some value occurs twice
    device: str = "cpu"
    structure: tuple[str, ...] = ()  # what its values are: symmetric, spd, lower, simplex...

    @property
    def is_floating(self) -> bool:
        return self.dtype.startswith(("float", "bfloat", "complex"))

    def describe(self) -> str:
        """`float32 [8, 4] in [-1.5, 1.4]`, as a recorded case's comment shows it."""
        text = f"{self.dtype} {list(self.shape)}"
        if self.low is not None and self.high is not None:
            text += f" in [{self.low:.3g}, {self.high:.3g}]"
        if self.repeats:
            text += " with repeats"
        if self.structure:
            text += ", " + " ".join(self.structure)
        return text


@dataclass(frozen=True)
class Argument:
    """One argument of a recorded call: a tensor, a literal, a callable that a `module:attr`
    name imports, or something a spec cannot give."""

    tensor: RecordedTensor | None = None
    literal: Any = None
    other: str | None = None  # the kind of value, for what a spec cannot write
    callable: str | None = None  # `module:attr`, for a callable module-level names reach
    function: bool = False  # `other` is a callable no `module:attr` name imports

    def describe(self) -> str:
        if self.tensor is not None:
            return self.tensor.describe()
        if self.callable is not None:
            return f"the callable {self.callable}"
        if self.other is not None:
            return f"a {self.other}"
        return json.dumps(self.literal)

    def signature(self) -> Any:
        if self.tensor is not None:
            return [list(self.tensor.shape), self.tensor.dtype, self.tensor.requires_grad]
        if self.callable is not None:
            return ["callable", self.callable]
        return self.other if self.other is not None else ["literal", self.literal]

    def pattern(self) -> Any:
        """The signature less what one case summarises: which tensors required grad, and the
        value of a float literal (a loop over `alpha` is one case, with the values' range)."""
        if self.tensor is not None:
            return [list(self.tensor.shape), self.tensor.dtype]
        if self.other is None and self.callable is None and isinstance(self.literal, float):
            return ["literal", "float"]
        return self.signature()


@dataclass(frozen=True)
class RecordedCall:
    """The first call of one target with one signature."""

    target: str
    site: str | None  # `file:line` of the user's call
    arguments: tuple[Argument, ...]
    keywords: dict[str, Argument] = field(default_factory=dict)
    problem: str | None = None  # why no spec can name the target

    @property
    def signature(self) -> str:
        """A short digest of target, shapes, dtypes and literals: the same signature in
        another run, or after its case was edited by hand, has the same digest."""
        parts = [
            self.target,
            [argument.signature() for argument in self.arguments],
            {name: argument.signature() for name, argument in sorted(self.keywords.items())},
        ]
        return _digest(parts)

    @property
    def pattern(self) -> str:
        """The digest of what calls summarised in one case share (Argument.pattern)."""
        parts = [
            self.target,
            [argument.pattern() for argument in self.arguments],
            {name: argument.pattern() for name, argument in sorted(self.keywords.items())},
        ]
        return _digest(parts)


def _digest(parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def read_records(path: Path) -> list[RecordedCall]:
    """The distinct calls in a record file (lines it cannot read are skipped)."""
    calls: dict[str, RecordedCall] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        call = parse_call(line)
        if call is not None:
            calls.setdefault(call.signature, call)
    return list(calls.values())


def parse_call(line: str | bytes) -> RecordedCall | None:
    """One line of a record file; None for a line cut short by a process killed mid-write."""
    try:
        return _call(json.loads(line))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _call(data: dict[str, Any]) -> RecordedCall:
    target = data["target"]
    return RecordedCall(
        target=str(target["name"]),
        site=data.get("site"),
        arguments=tuple(_argument(item) for item in data["args"]),
        keywords={str(name): _argument(item) for name, item in data.get("kwargs", {}).items()},
        problem=target.get("problem"),
    )


def _argument(data: dict[str, Any]) -> Argument:
    if "tensor" in data:
        tensor = data["tensor"]
        return Argument(
            tensor=RecordedTensor(
                shape=tuple(int(size) for size in tensor["shape"]),
                dtype=str(tensor["dtype"]),
                requires_grad=bool(tensor["requires_grad"]),
                low=tensor.get("min"),
                high=tensor.get("max"),
                values=tensor.get("values"),
                repeats=tensor.get("repeats"),
                device=str(tensor.get("device", "cpu")),
                structure=tuple(str(name) for name in tensor.get("structure", ())),
            )
        )
    if "literal" in data:
        return Argument(literal=data["literal"])
    if "callable" in data:
        return Argument(callable=str(data["callable"]))
    return Argument(other=str(data["other"]), function=bool(data.get("function")))
