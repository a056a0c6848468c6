"""What the signature says of each parameter of forward before any probe: a `Plan` per
parameter, from what costs nothing (a default, an annotation, a conventional name, what
forward's source indexes with), and the shapes each layout gives a tensor.

Importing this module never imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gradverify.inference.choice import CALLABLE, LITERAL, NUMBER, TENSOR, Choice
from gradverify.inference.reading.annotations import annotations_of
from gradverify.inference.reading.call_sites import (
    Passed,
    buffers_at_call_sites,
    passed_at_call_sites,
)
from gradverify.inference.reading.contract import Contract
from gradverify.inference.reading.parameters import (
    MASK,
    OUT,
    SHAPE,
    concrete_shape,
    divided_symbols,
    read_contract,
)
from gradverify.inference.reading.source import is_mask, source_facts
from gradverify.spec.models import MATRIX_STRUCTURES

if TYPE_CHECKING:
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
BATCHED_SQUARE = (2, 3, 3)  # a batch of square matrices (rotations, covariances)
LAYOUTS: tuple[tuple[int, ...] | str, ...] = (ELEMENTWISE, "linear", SQUARE, "nchw", BATCHED_SQUARE)
# Functions a parameter that takes one gets (`fn`, `func`, `callback`): one argument, then two
# (`func(t, y)`), each smooth and nonlinear in its tensor.
CALLABLES = ("torch:sin", "torch:mul")
# An index tensor: longer than what it indexes, so that its values repeat.
INDEX_SHAPES: dict[Any, tuple[int, ...]] = {ELEMENTWISE: (6,), "linear": LINEAR_INPUT[:1]}


@dataclass(frozen=True)
class Plan:
    """What the signature says of one parameter before any probe."""

    index: int
    name: str
    kind: str  # the kind to try first
    value: Any = None
    reason: str = ""
    flexible: bool = True  # the other kind may be tried too
    requires_grad: bool = True

    indices: bool = False  # an integer index tensor (gradverify.inference.reading.source)
    mask: bool = False  # the index tensor is a bool mask
    optional_tensor: bool = False  # None by default, a tensor where given (`bias=None`)
    structure: str | None = (
        None  # what the code asks its values to be (gradverify.inference.reading.parameters)
    )
    fixed: tuple[int, ...] | None = None  # the shape the code asks for, whatever the layout
    a_shape: bool = False  # a tuple of ints: the first tensor's shape

    def choice(self, layout: tuple[int, ...] | str) -> Choice:
        if self.indices and not self.mask and self.fixed is not None:  # `ids: (N,)`
            return Choice(self.name, TENSOR, self.fixed, None, self.reason, False, "int64", 0, 0)
        if self.fixed is not None or self.structure is not None:
            shape = self.fixed if self.fixed is not None else self._shape(layout)
            return Choice(
                self.name, TENSOR, shape, None, self.reason, self.requires_grad,
                structure=self.structure,
            )  # fmt: skip
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


def choices_for(plans: list[Plan], layout: tuple[int, ...] | str) -> list[Choice]:
    """Each plan's choice in `layout`; a shape parameter given the first tensor's shape."""
    choices = [plan.choice(layout) for plan in plans]
    first = next((c.shape for c in choices if c.kind == TENSOR and c.dtype == "float64"), None)
    return [
        Choice(c.name, NUMBER, value=first, reason=c.reason) if plan.a_shape and first else c
        for plan, c in zip(plans, choices, strict=True)
    ]


def layouts_for(plans: list[Plan]) -> list[tuple[int, ...] | str]:
    """LAYOUTS, after the shapes the code asks for: the first such shape for the tensors
    it says nothing of, then a vector of its last dim (`b` beside a matrix `A` [3, 3])."""
    fixed = next((plan.fixed for plan in plans if plan.fixed), None)
    if fixed is None:
        return list(LAYOUTS)
    return list(dict.fromkeys([fixed, fixed[-1:], *LAYOUTS]))


def plans_of(target: Target) -> list[Plan]:
    annotations = annotations_of(target)
    facts = source_facts(target)
    contracts = read_contract(target)
    passed = passed_at_call_sites(target)
    buffers = buffers_at_call_sites(target)
    # the named dims of every shape read, one size each; those a shape divides first
    symbols = divided_symbols(contracts.values())
    plans: list[Plan] = []
    for index, name in enumerate(target.parameters):
        annotation = annotations.get(name, "")
        stated = contracts.get(name)
        # forward indexes with it, or its docstring says it holds integers (`[N] int64`)
        indexes = name in facts.indices or (stated is not None and stated.integer)
        said = _heeded(stated, annotation, indexes)
        if said is not None and (annotation in SCALAR_TYPES or name in SCALAR_NAMES):
            said = None  # a number by its annotation or name: no tensor's contract
        contracted = _contracted(index, name, said, symbols) if said is not None else None
        if index in passed and name not in target.defaults and not indexes:
            plans.append(_as_called(index, name, passed[index]))
        elif contracted is not None and indexes:
            why = "forward indexes with it" if name in facts.indices else "its docstring says so"
            reason = f"{why}: int64 indices; {contracted.reason}"
            plans.append(Plan(index, name, TENSOR, None, reason, False, False, indices=True,
                              fixed=contracted.fixed))  # fmt: skip
        elif contracted is not None:
            plans.append(contracted)
        elif indexes and name not in target.defaults and annotation in ("", "Tensor"):
            mask = is_mask(name)
            why = "forward indexes with it" if name in facts.indices else "its docstring says so"
            reason = f"{why}: {'a bool mask' if mask else 'int64 indices'}"
            plans.append(
                Plan(index, name, TENSOR, None, reason, False, False, indices=True, mask=mask)
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
                Plan(
                    index, name, LITERAL, default, reason, flexible=False, optional_tensor=tensorish
                )
            )
        elif "Tensor" in annotation:
            reason = "Tensor in the op's schema" if target.schema_types else "annotated Tensor"
            written = _written(target, index)
            if written:  # torch allows no autograd formula for an op that mutates
                reason = "written in place by the op (mutates_args): requires_grad false"
            plans.append(Plan(index, name, TENSOR, None, reason, False, not written))
        elif annotation in SCALAR_TYPES:
            value = SCALAR_NAMES.get(name, SCALAR_TYPES[annotation])
            reason = f"{annotation}, no default: choose a value"
            plans.append(Plan(index, name, NUMBER, value, reason, flexible=False))
        elif annotation in LIST_TYPES:
            reason = f"{annotation}, no default: choose a value"
            plans.append(Plan(index, name, NUMBER, LIST_TYPES[annotation], reason, False))
        elif name in SCALAR_NAMES:
            reason = "by its name: choose a value"
            plans.append(Plan(index, name, NUMBER, SCALAR_NAMES[name], reason))
        else:
            plans.append(Plan(index, name, TENSOR, flexible=index > 0))
    return [_constant(plan, buffers.get(plan.index)) for plan in plans]


def _constant(plan: Plan, buffer: str | None) -> Plan:
    """A tensor the package passes as a registered buffer (`Fn.apply(x, self.filt)`) is a
    constant: drawn, never differentiated."""
    if buffer is None or plan.kind not in (TENSOR, NUMBER) or plan.indices or plan.mask:
        return plan
    if plan.kind == TENSOR and not plan.requires_grad:
        return plan  # its docstring said so already
    reason = f"the package passes a registered buffer ({buffer}): requires_grad false"
    if plan.kind == TENSOR and plan.reason:
        reason = f"{plan.reason}; {reason}"
    return replace(plan, kind=TENSOR, value=None, reason=reason, flexible=False,
                   requires_grad=False)  # fmt: skip


def _heeded(said: Contract | None, annotation: str, indexes: bool) -> Contract | None:
    """The contract, less what a parameter's name alone suggests where its annotation says
    otherwise (`size: int` is a number, not a shape) or forward indexes with it."""
    if said is None or said.kind is None:
        return said
    named_only = all(reason.startswith("named ") for reason in said.reasons)
    annotated = annotation not in ("", "Tensor", "Any", "object") and "Callable" not in annotation
    if (named_only and annotated) or (said.kind == MASK and indexes):
        return replace(said, kind=None) if not named_only else None
    return said


def _as_called(index: int, name: str, passed: Passed) -> Plan:
    """What every call site of the package passes (gradverify.inference.reading.call_sites)."""
    reason = f"as the package calls it ({passed.where})"
    if passed.function:
        return Plan(index, name, CALLABLE, passed.value, reason, flexible=False)
    kind = LITERAL if passed.value is None else NUMBER
    return Plan(index, name, kind, passed.value, reason, flexible=False)


def _contracted(index: int, name: str, said: Contract, symbols: dict[str, int]) -> Plan | None:
    """The plan for a parameter the code says something of (gradverify.inference.reading.parameters)."""
    reason = said.reason
    if said.kind == CALLABLE:  # flexible: a tensor after all where the name misled (`f`)
        return Plan(index, name, CALLABLE, CALLABLES[0], reason)
    if said.kind == SHAPE:
        return Plan(index, name, NUMBER, ELEMENTWISE, reason, flexible=False, a_shape=True)
    if said.kind == OUT:
        reason += ": a tensor like the first, written into"
        return Plan(index, name, TENSOR, None, reason, False, requires_grad=False)
    if said.kind == MASK:
        return Plan(index, name, TENSOR, None, reason + ": a bool mask", False, False, mask=True)
    shape = concrete_shape(said, symbols)
    structure = said.structure
    if structure in MATRIX_STRUCTURES:
        if shape is not None and len(shape) < 2:
            structure = None  # a vector cannot be a matrix: the shape the code wrote wins
        elif shape is not None:
            shape = (*shape[:-1], shape[-2])  # square, as the structure needs
        else:
            shape = SQUARE
    if shape is None and structure is None and not said.constant:
        return None
    # Only words said it (`eps: a small positive number`, `a scalar`): a tensor first, a
    # number if backward leaves it None, as for any other parameter.
    loose = (shape is None or said.loose) and structure not in MATRIX_STRUCTURES
    if said.constant:
        reason += ": requires_grad false"
    # A constant by words alone (`scale: a constant factor`) may be a number after all.
    return Plan(index, name, TENSOR, None, reason, loose, not said.constant,
                structure=structure, fixed=shape)  # fmt: skip


def _written(target: Target, index: int) -> bool:
    """An op's argument its schema marks written (`Tensor(a!)`, from mutates_args): the
    target's dirty arguments, as `custom_ops` reads them off the schema."""
    return target.op is not None and target.dirty.marks(index)


# Names an index tensor goes by (`index`, `segment_ids`, `dst`, `batch`), tried as int64
# indices where forward's error asks for an integer index.
INDEX_NAMES = re.compile(
    r"(?:^|_)(?:idx|index|indices|ids?|dst|src|segments?|batch|ptr|labels?|rows?|cols?)(?:$|_)",
    re.IGNORECASE,
)
# torch's words for a float tensor given where it wants an integer index.
ASKS_FOR_INDICES = re.compile(
    r"Expected dtype int(?:32|64)(?:/int(?:32|64))? for index|expected scalar type Long"
    r"|tensors used as indices must be long|must be a LongTensor",
    re.IGNORECASE,
)


def as_indices(plans: Sequence[Plan], error: str | None) -> list[Plan]:
    """`plans` with each float tensor named like an index (`segment_ids`, `dst`) made an
    int64 index, where forward's `error` asks for integer indices; else as they were."""
    if error is None or not ASKS_FOR_INDICES.search(error):
        return list(plans)
    reason = "forward asked for integer indices, and its name reads as one: int64 indices"
    return [
        replace(plan, kind=TENSOR, indices=True, mask=False, reason=reason, requires_grad=False)
        if plan.kind == TENSOR
        and not plan.indices
        and plan.index > 0
        and INDEX_NAMES.search(plan.name)
        else plan
        for plan in plans
    ]
