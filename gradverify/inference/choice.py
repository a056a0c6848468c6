"""What inference chooses: one `Choice` per parameter of forward, and the `Inference` of a
target (its base case and extra cases), with the spec they make.

Importing this module never imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gradverify.inference.blame import rejected_every
from gradverify.target.dependencies import needed_package

if TYPE_CHECKING:
    from gradverify.inference.random_backward import RandomBackward
    from gradverify.spec.models import FunctionSpec

# Where forward's output is not finite on [-1, 1] (log, sqrt, a fractional power).
POSITIVE = (0.1, 2.0)
# The name of a zero-config run's base case; the probe draws under it too, so that the
# values forward was tried on are the values the case is checked on.
CASE = "inferred"

TENSOR, NUMBER, LITERAL, CALLABLE = "tensor", "number", "literal", "callable"


@dataclass(frozen=True)
class Choice:
    """What one parameter of forward gets, and why."""

    name: str
    kind: str  # TENSOR, NUMBER (inferred) or LITERAL (forward's default)
    shape: tuple[int, ...] = ()
    value: Any = None
    reason: str = ""
    requires_grad: bool = True  # False for a tensor an op writes in place (mutates_args)
    dtype: str = "float64"  # int64 for an index tensor, complex128 where forward is complex
    low: float = -1.0
    high: float = 1.0
    optional_tensor: bool = False  # None by default, a tensor where given (`bias=None`)
    device: str = "cpu"  # another where forward refuses CPU tensors (inference/search/precision.py)
    structure: str | None = None  # the spec's `structure:` (spd, symmetric, lower, ...)

    @property
    def item(self) -> Any:
        """The spec's input for it."""
        if self.kind == TENSOR:
            item: dict[str, Any] = {"shape": list(self.shape)}
            if self.dtype != "float64":
                item["dtype"] = self.dtype
            if self.device != "cpu":
                item["device"] = self.device
            item.update(low=self.low, high=self.high)
            if self.structure is not None:
                item["structure"] = self.structure
            return item if self.requires_grad else {**item, "requires_grad": False}
        if self.kind == CALLABLE:
            return {"callable": self.value}
        if isinstance(self.value, dict):
            return {"value": self.value}  # a bare mapping would read as a tensor
        return list(self.value) if isinstance(self.value, tuple) else self.value

    def describe(self) -> str:
        if self.kind == TENSOR:
            what = f": a {self.dtype} tensor {list(self.shape)}"
            if self.dtype.startswith("int"):
                what += f" of indices {self.low:g}..{self.high:g}"
            elif (self.low, self.high) == POSITIVE:
                what += f" in [{self.low:g}, {self.high:g}]"
            if self.structure is not None:
                what += f", {self.structure}"
        elif self.kind == CALLABLE:
            what = f": the function {self.value}"
        elif self.kind == NUMBER:
            what = f": the {kind_of(self.value)} {self.item!r}"
        else:
            what = f"={self.value!r}"
        return f"{self.name}{what}" + (f" ({self.reason})" if self.reason else "")


def kind_of(value: Any) -> str:
    """What an inferred literal is, in a word: a number, a bool (True) or a list ([-1])."""
    if isinstance(value, tuple):
        return "list"
    if isinstance(value, str):
        return "string"
    return "bool" if isinstance(value, bool) else "number"


@dataclass(frozen=True)
class Inference:
    """The inputs chosen for a target, and whether forward and backward ran on them."""

    target: str
    choices: tuple[Choice, ...]
    variadic: str | None = None
    ran: bool = True  # forward and backward ran, every gradient well-formed
    rejection: str | None = None  # forward rejected every candidate: its first complaint
    extra: tuple[tuple[str, tuple[Choice, ...]], ...] = ()  # (label, choices): more cases
    # The docstring's words declaring backward a surrogate (`straight-through estimator`):
    # the spec's `gradient: surrogate`, the user's own declaration.
    surrogate: str | None = None
    # A backward that draws random numbers of its own (gradverify.inference.random_backward):
    # the spec's `gradient: approximate`, `samples` and `max_error`.
    random_backward: RandomBackward | None = None

    @property
    def stopped(self) -> str | None:
        """Why inference gave up, as plain text (None: it did not)."""
        if self.rejection is None:
            return None
        if self.rejection.startswith("needs CUDA"):  # inference/search/precision.py: it says it all
            return self.rejection
        needed = needed_package(self.rejection, self.target)
        if needed is not None:  # forward imports a package this machine lacks
            return f"{needed}: forward imports it ({self.rejection})"
        guessed = [c.name for c in self.choices if c.kind == TENSOR and c.dtype == "float64"]
        named = [name for name in guessed if re.search(rf"\b{re.escape(name)}\b", self.rejection)]
        which = f" for {', '.join(named or guessed)}" if guessed else ""
        if self.rejection.startswith(("backward raised", "forward returned no tensor")):
            return f"no input tried fits the Function's contract{which} ({self.rejection})"
        return f"{rejected_every(self.rejection)}{which} ({self.rejection})"

    @property
    def cases(self) -> list[tuple[str, tuple[Choice, ...]]]:
        """Every inferred case: the base one (its label empty), then the extra ones."""
        return [("", self.choices), *self.extra]

    def inputs(self) -> list[Any]:
        return [choice.item for choice in self.choices]

    def spec(self, case: str = "inferred") -> FunctionSpec:
        from gradverify.spec.models import FunctionSpec

        cases = [
            {"name": case_name(case, label), "inputs": [choice.item for choice in choices]}
            for label, choices in self.cases
        ]
        gradient: dict[str, Any] = {"gradient": "surrogate"} if self.surrogate else {}
        if not self.surrogate and self.random_backward is not None:
            gradient = self.random_backward.spec_keys()
        return FunctionSpec.model_validate({"target": self.target, **gradient, "cases": cases})

    def summary(self) -> str:
        return ", ".join(choice.describe() for choice in self.choices) or "no arguments"

    def coverage(self) -> str:
        """The cases in a phrase: `4 cases (x [4]; x [3, 5], dim=0; ...)`."""
        labels = [label or _label(self.choices) for label, _ in self.cases]
        count = f"{len(labels)} case" + ("s" if len(labels) != 1 else "")
        return f"{count} ({'; '.join(labels)})"


def case_name(base: str, label: str) -> str:
    """An extra case's name: the base name, then what it varies."""
    return f"{base}: {label}" if label else base


def _label(choices: Sequence[Choice]) -> str:
    tensors = [f"{c.name} {list(c.shape)}" for c in choices if c.kind == TENSOR]
    return ", ".join(tensors) or "no tensors"


def in_domain(choices: list[Choice], low: float, high: float) -> list[Choice]:
    """Float tensors drawn from [low, high], index tensors fit to them."""
    ranged = [replace(c, low=low, high=high) if is_float_tensor(c) else c for c in choices]
    return fit_indices(ranged)


def fit_indices(choices: Sequence[Choice]) -> list[Choice]:
    """Index tensors valid for the smallest size a float tensor has (so that they index any
    of its dimensions), from 0, with repeats."""
    sizes = [n for c in choices if is_float_tensor(c) for n in c.shape]
    top = max(0, min(sizes, default=1) - 1)
    return [replace(c, low=0, high=top) if c.dtype == "int64" else c for c in choices]


def with_choice(base: Sequence[Choice], index: int, choice: Choice) -> list[Choice]:
    """`base` with its argument `index` replaced by `choice`."""
    return [*base[:index], choice, *base[index + 1 :]]


def is_float_tensor(choice: Choice) -> bool:
    return choice.kind == TENSOR and choice.dtype == "float64"


def as_complex(choices: Sequence[Choice]) -> list[Choice]:
    """The float tensors of `choices` complex128 (forward conjugates, or takes real and
    imaginary parts)."""
    return [replace(c, dtype="complex128") if is_float_tensor(c) else c for c in choices]
