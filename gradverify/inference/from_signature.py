"""Inputs inferred from forward's signature and from trying them: the one inference behind
zero-config `check`, its suggested spec, and `init` (gradverify.inference.spec_text writes the
spec's text).

Each parameter gets a kind from what costs nothing first (a default, an annotation, a
conventional name), then from probes: one forward and one backward on tiny float64 inputs.
Candidates are tried in order (a tensor of the first argument's shape, a 0-d tensor, a
number, Linear-like shapes) and the first assignment with which forward and backward run
and every gradient is well-formed is kept. A parameter whose gradient backward leaves None,
and which forward accepts as a number, is taken for a number.

Importing this module never imports torch; `infer` does.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gradverify.inference.probe import NOT_FINITE, STAGES, ProbeOutcome, probe
from gradverify.inference.source import (
    SourceFacts,
    conjugates_complex_inputs,
    is_mask,
    read_forward,
)

if TYPE_CHECKING:
    from gradverify.spec.models import FunctionSpec
    from gradverify.target.loaded import Target

# Names that conventionally hold a Linear's weight and bias, for the Linear-like shapes.
WEIGHT_NAMES = re.compile(r"(^|_)(w|weight|weights|kernel|matrix)($|_)", re.IGNORECASE)
BIAS_NAMES = re.compile(r"(^|_)(b|bias|offset)($|_)", re.IGNORECASE)
# A number forward gets when nothing says which: 0.5 exercises a clamp bound inside the
# inputs' range; 2 where a fraction gives nan (a power of a negative) or an int is needed.
NUMBERS = (0.5, 2)
# Where forward takes no number there either, a list of them (`sum(weights)`).
LISTED = "backward returns None for it, and forward takes a list of numbers"
# A float without a default gets 0.5, not 1.0: a factor of 1 hides a backward that forgets
# to multiply by it (`grad * f'(x)` where `grad * scale * f'(x)` belongs).
SCALAR_TYPES = {"int": 1, "float": NUMBERS[0], "bool": True, "str": ""}
# A list of ints (`int[]` in an op's schema) is most often dims or a shape: [-1] is both.
LIST_TYPES = {"int[]": (-1,), "float[]": (1.0,), "bool[]": (True,)}
# `Optional[X]` (or `Union[X, None]`): read as X, as `X | None` is.
OPTIONAL = re.compile(r"(?:Optional\[([\w.]+)\]|Union\[([\w.]+), None(?:Type)?\])")
# A Python annotation of a list of numbers, read as the schema's list types above.
LIST_ANNOTATION = re.compile(r"(?:List|list|Sequence|Tuple|tuple)\[(int|float|bool)(?:, \.\.\.)?\]")
# An op's schema types, as the annotations above read them (`Tensor?` is a Tensor or None).
SCHEMA_ANNOTATIONS = {"Tensor?": "Tensor", "Scalar": "float", "Scalar?": "float"}
# Parameters that are numbers by convention. Bounds lie inside the inputs' range [-1, 1],
# so that a clamp acts on some elements and its backward's mask is checked: bounds that
# enclosed the range would pass a backward that forgot the mask.
SCALAR_NAMES: dict[str, Any] = {
    "dim": -1, "axis": -1, "keepdim": False, "eps": 1e-5, "inplace": False,
    "min": -0.5, "min_val": -0.5, "lower": -0.5, "max": 0.5, "max_val": 0.5, "upper": 0.5,
}  # fmt: skip
ELEMENTWISE = (4,)
LINEAR_INPUT, LINEAR_WEIGHT, LINEAR_BIAS = (2, 4), (3, 4), (3,)
SQUARE = (3, 3)
# Where forward wants a batch of images: H ≠ W, so that a backward mixing them up shows.
NCHW, CHANNELS = (2, 3, 4, 5), (3,)
LAYOUTS: tuple[tuple[int, ...] | str, ...] = (ELEMENTWISE, "linear", SQUARE, "nchw")
# An index tensor: longer than what it indexes, so that its values repeat.
INDEX_SHAPES: dict[Any, tuple[int, ...]] = {ELEMENTWISE: (6,), "linear": LINEAR_INPUT[:1]}
# Where forward's output is not finite on [-1, 1] (log, sqrt, a fractional power).
POSITIVE = (0.1, 2.0)

TENSOR, NUMBER, LITERAL = "tensor", "number", "literal"


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

    @property
    def item(self) -> Any:
        """The spec's input for it."""
        if self.kind == TENSOR:
            item: dict[str, Any] = {"shape": list(self.shape)}
            if self.dtype != "float64":
                item["dtype"] = self.dtype
            item.update(low=self.low, high=self.high)
            return item if self.requires_grad else {**item, "requires_grad": False}
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

    @property
    def stopped(self) -> str | None:
        """Why inference gave up, as plain text (None: it did not)."""
        if self.rejection is None:
            return None
        guessed = [c.name for c in self.choices if c.kind == TENSOR and c.dtype == "float64"]
        named = [name for name in guessed if re.search(rf"\b{re.escape(name)}\b", self.rejection)]
        which = f" for {', '.join(named or guessed)}" if guessed else ""
        return f"forward rejected every shape tried{which} ({self.rejection})"

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
        return FunctionSpec.model_validate({"target": self.target, "cases": cases})

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


def _in_domain(choices: list[Choice], low: float, high: float) -> list[Choice]:
    """Float tensors drawn from [low, high], index tensors fit to them."""
    ranged = [replace(c, low=low, high=high) if is_float_tensor(c) else c for c in choices]
    return fit_indices(ranged)


def fit_indices(choices: Sequence[Choice]) -> list[Choice]:
    """Index tensors valid for the smallest size a float tensor has (so that they index any
    of its dimensions), from 0, with repeats."""
    sizes = [n for c in choices if is_float_tensor(c) for n in c.shape]
    top = max(0, min(sizes, default=1) - 1)
    return [replace(c, low=0, high=top) if c.dtype == "int64" else c for c in choices]


def is_float_tensor(choice: Choice) -> bool:
    return choice.kind == TENSOR and choice.dtype == "float64"


def as_complex(choices: Sequence[Choice]) -> list[Choice]:
    """The float tensors of `choices` complex128 (forward conjugates, or takes real and
    imaginary parts)."""
    return [replace(c, dtype="complex128") if is_float_tensor(c) else c for c in choices]


def infer(target: Target) -> Inference:
    """Choose inputs for `target` by its signature and by probing forward and backward:
    one base case, then more cases that reach other paths (gradverify.inference.cases)."""
    from gradverify.inference.cases import widened

    base = _base(target)
    if base.rejection is not None or not base.ran:
        return base
    return replace(base, extra=widened(target, base.choices))


def _base(target: Target) -> Inference:
    """The first assignment with which forward and backward run well."""
    plans = _plans(target)
    search = _Search(target)
    for low, high in ((-1.0, 1.0), POSITIVE):
        for layout in LAYOUTS:
            choices = _in_domain([plan.choice(layout) for plan in plans], low, high)
            found = search.settle(choices, plans)
            if found is not None:
                return Inference(target.spec, tuple(found), target.variadic)
        if not search.not_finite:
            break
    if search.forward_ran is None and source_facts(target).complex:
        # forward takes complex numbers apart (`z.imag`, `view_as_real`): perhaps only them
        for layout in LAYOUTS:
            choices = as_complex(_in_domain([plan.choice(layout) for plan in plans], -1.0, 1.0))
            found = search.settle(choices, plans)
            if found is not None:
                return Inference(target.spec, tuple(found), target.variadic)
    if search.forward_ran is not None:  # the checks will show what backward does wrong
        return Inference(target.spec, tuple(search.forward_ran), target.variadic, ran=False)
    unknown = "forward rejected every shape tried: choose its shape"
    guesses = [
        replace(choice, reason=unknown) if is_float_tensor(choice) else choice
        for choice in _in_domain([plan.choice(ELEMENTWISE) for plan in plans], -1.0, 1.0)
    ]
    return Inference(target.spec, tuple(guesses), target.variadic, False, search.first_error)


@dataclass(frozen=True)
class _Plan:
    """What the signature says of one parameter before any probe."""

    index: int
    name: str
    kind: str  # the kind to try first
    value: Any = None
    reason: str = ""
    flexible: bool = True  # the other kind may be tried too
    requires_grad: bool = True

    indices: bool = False  # an integer index tensor (gradverify.inference.source)
    mask: bool = False  # the index tensor is a bool mask
    optional_tensor: bool = False  # None by default, a tensor where given (`bias=None`)

    def choice(self, layout: tuple[int, ...] | str) -> Choice:
        if self.mask:  # a mask is shaped like what it masks
            shape = self._shape(layout)
            return Choice(self.name, TENSOR, shape, None, self.reason, False, "bool", 0, 1)
        if self.indices:
            shape = INDEX_SHAPES.get(layout, (2,))
            return Choice(self.name, TENSOR, shape, None, self.reason, False, "int64", 0, 0)
        if self.kind == TENSOR:
            shape = self._shape(layout)
            return Choice(self.name, TENSOR, shape, None, self.reason, self.requires_grad)
        return Choice(
            self.name,
            self.kind,
            value=self.value,
            reason=self.reason,
            optional_tensor=self.optional_tensor,
        )

    def _shape(self, layout: tuple[int, ...] | str) -> tuple[int, ...]:
        if layout == "nchw":
            named = WEIGHT_NAMES.search(self.name) or BIAS_NAMES.search(self.name)
            return CHANNELS if self.index > 0 and named else NCHW
        if layout != "linear":
            return layout  # type: ignore[return-value]
        if WEIGHT_NAMES.search(self.name):
            return LINEAR_WEIGHT
        return LINEAR_BIAS if BIAS_NAMES.search(self.name) else LINEAR_INPUT


def _plans(target: Target) -> list[_Plan]:
    annotations = annotations_of(target)
    facts = source_facts(target)
    plans = []
    for index, name in enumerate(target.parameters):
        annotation = annotations.get(name, "")
        if name in facts.indices and name not in target.defaults and annotation in ("", "Tensor"):
            mask = is_mask(name)
            reason = f"forward indexes with it: {'a bool mask' if mask else 'int64 indices'}"
            plans.append(
                _Plan(index, name, TENSOR, None, reason, False, False, indices=True, mask=mask)
            )
        elif name in target.defaults:
            default = target.defaults[name]
            tensorish = default is None and bool("Tensor" in annotation or BIAS_NAMES.search(name))
            reason = (
                "None by default; `{shape: [...]}` checks its gradient too"
                if tensorish
                else "forward's default"
            )
            plans.append(
                _Plan(
                    index, name, LITERAL, default, reason, flexible=False, optional_tensor=tensorish
                )
            )
        elif "Tensor" in annotation:
            reason = "Tensor in the op's schema" if target.schema_types else "annotated Tensor"
            written = _written(target, index)
            if written:  # torch allows no autograd formula for an op that mutates
                reason = "written in place by the op (mutates_args): requires_grad false"
            plans.append(_Plan(index, name, TENSOR, None, reason, False, not written))
        elif annotation in SCALAR_TYPES:
            value = SCALAR_NAMES.get(name, SCALAR_TYPES[annotation])
            reason = f"{annotation}, no default: choose a value"
            plans.append(_Plan(index, name, NUMBER, value, reason, flexible=False))
        elif annotation in LIST_TYPES:
            reason = f"{annotation}, no default: choose a value"
            plans.append(_Plan(index, name, NUMBER, LIST_TYPES[annotation], reason, False))
        elif name in SCALAR_NAMES:
            reason = "by its name: choose a value"
            plans.append(_Plan(index, name, NUMBER, SCALAR_NAMES[name], reason))
        else:
            plans.append(_Plan(index, name, TENSOR, flexible=index > 0))
    return plans


def _written(target: Target, index: int) -> bool:
    """An op's argument its schema marks written (`Tensor(a!)`, from mutates_args): the
    target's dirty arguments, as `custom_ops` reads them off the schema."""
    return target.op is not None and target.dirty.marks(index)


def source_facts(target: Target) -> SourceFacts:
    """What forward's source shows of its parameters (indices, complex numbers); complex
    inputs where backward conjugates them too."""
    forward = getattr(target.obj, "forward", target.obj) if target.is_function else target.obj
    if target.op is not None:
        return SourceFacts()
    facts = read_forward(forward, tuple(target.parameters), annotations_of(target))
    backward = getattr(target.obj, "backward", None) if target.is_function else None
    if not facts.complex and conjugates_complex_inputs(backward):
        return replace(facts, complex=True)
    return facts


def annotations_of(target: Target) -> dict[str, str]:
    """Parameter annotations as written (strings), read without evaluating them; an op's
    types from its schema."""
    if target.schema_types:
        return {
            name: SCHEMA_ANNOTATIONS.get(kind, kind) for name, kind in target.schema_types.items()
        }
    forward = getattr(target.obj, "forward", target.obj) if target.is_function else target.obj
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return {}
    written = {}
    for name, parameter in signature.parameters.items():
        annotation = parameter.annotation
        if annotation is parameter.empty:
            continue
        spelled = annotation if isinstance(annotation, str) else str(annotation)
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        optional = OPTIONAL.fullmatch(spelled.replace("typing.", ""))
        if optional:  # Optional[torch.Tensor] -> Tensor, as `torch.Tensor | None` reads
            text = optional.group(1) or optional.group(2)
        written[name] = _schema_list(spelled) or text.rsplit(".", 1)[-1].removesuffix(" | None")
    return written


def _schema_list(text: str) -> str | None:
    """A Python list annotation as an op's schema writes it: `List[float]`, `list[int]`,
    `Sequence[int]`, `tuple[int, ...]` -> `float[]`, `int[]` (None for anything else)."""
    found = LIST_ANNOTATION.fullmatch(text.replace("typing.", "").replace("collections.abc.", ""))
    return f"{found.group(1)}[]" if found else None


class _Search:
    """Probes one assignment after another; remembers the fallbacks."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.forward_ran: list[Choice] | None = None
        self.first_error: str | None = None
        self.not_finite = False  # forward gave NaN or Inf somewhere: try a positive domain
        self.probes = 0

    def settle(self, choices: list[Choice], plans: Sequence[_Plan]) -> list[Choice] | None:
        """`choices`, or a neighbour of it, that forward and backward run on well; else None."""
        outcome = self._probe(choices)
        # Perhaps a parameter is a number (or a tensor) after all, or a 0-d tensor.
        for repair in (_flipped(choices, plans), _zero_dimensional(choices, outcome)):
            if outcome.stage == "done" or repair == choices:
                continue
            tried = self._probe(repair)
            if STAGES.index(tried.stage) > STAGES.index(outcome.stage):
                choices, outcome = repair, tried
        if outcome.stage == "forward":
            return None
        self.forward_ran = self.forward_ran or choices
        if outcome.wrong_shape:
            choices, outcome = self._reshape(choices, plans, outcome)
        if outcome.stage == "backward" or outcome.wrong_shape:
            return None
        return self._numbers_for_none(choices, plans, outcome.none)

    def _reshape(
        self, choices: list[Choice], plans: Sequence[_Plan], outcome: ProbeOutcome
    ) -> tuple[list[Choice], ProbeOutcome]:
        """Arguments whose gradient has another shape: a 0-d tensor, then a number."""
        for index in outcome.wrong_shape:
            if index == 0:  # the first argument sets the shapes: its gradient is backward's to fit
                continue
            alternatives = [replace(choices[index], shape=(), reason="backward's gradient is 0-d")]
            if plans[index].flexible:
                alternatives += _numbers(
                    choices[index], "backward's gradient does not fit a tensor"
                )
            for alternative in alternatives:
                trial = [*choices[:index], alternative, *choices[index + 1 :]]
                tried = self._probe(trial)
                if tried.stage == "done" and index not in tried.wrong_shape:
                    choices, outcome = trial, tried
                    break
        return choices, outcome

    def _numbers_for_none(
        self, choices: list[Choice], plans: Sequence[_Plan], none: Sequence[int]
    ) -> list[Choice]:
        """A tensor whose gradient backward leaves None is a number, if forward takes one:
        all of them at once first (`clamp(x, -qn, qp)` takes two numbers, not a number and a
        tensor), then one at a time."""
        reason = "backward returns None for it, and forward takes a number"
        flexible = [i for i in none if plans[i].flexible and choices[i].kind == TENSOR]
        if len(flexible) > 1:
            for value in NUMBERS:
                trial = [
                    Choice(c.name, NUMBER, value=value, reason=reason) if i in flexible else c
                    for i, c in enumerate(choices)
                ]
                tried = self._probe(trial)
                if tried.stage == "done" and not tried.wrong_shape:
                    return trial
        for index in flexible:
            listed = Choice(choices[index].name, NUMBER, value=NUMBERS, reason=LISTED)
            for alternative in [*_numbers(choices[index], reason), listed]:
                trial = [*choices[:index], alternative, *choices[index + 1 :]]
                tried = self._probe(trial)
                if tried.stage == "done" and not tried.wrong_shape:
                    choices = trial
                    break
        return choices

    def _probe(self, choices: Sequence[Choice]) -> ProbeOutcome:
        self.probes += 1
        outcome = probe(self.target, choices)
        if outcome.stage == "forward" and self.first_error is None:
            self.first_error = outcome.error
        self.not_finite = self.not_finite or outcome.error == NOT_FINITE
        return outcome


def _flipped(choices: list[Choice], plans: Sequence[_Plan]) -> list[Choice]:
    """The flexible parameters as the other kind: tensors as numbers, numbers as tensors."""
    flipped = []
    for choice, plan in zip(choices, plans, strict=True):
        if not plan.flexible:
            flipped.append(choice)
        elif choice.kind == TENSOR:
            flipped.append(_numbers(choice, "forward uses it as one")[0])
        else:
            shape = choices[0].shape if choices and choices[0].kind == TENSOR else ELEMENTWISE
            flipped.append(Choice(choice.name, TENSOR, shape, reason="forward rejects a number"))
    return flipped


def _zero_dimensional(choices: list[Choice], outcome: ProbeOutcome) -> list[Choice]:
    """The tensors after the first as 0-d tensors (a scalar parameter such as Swish's beta)."""
    reason = f"{outcome.stage} rejects shape {list(choices[0].shape)}" if choices else ""
    return [
        replace(choice, shape=(), reason=reason)
        if index > 0 and choice.kind == TENSOR and choice.shape
        else choice
        for index, choice in enumerate(choices)
    ]


def _numbers(choice: Choice, reason: str) -> list[Choice]:
    return [Choice(choice.name, NUMBER, value=value, reason=reason) for value in NUMBERS]
