"""More inferred cases than the base one, each chosen to reach a path it cannot: values
past the numbers forward and backward compare with, other ranks, every value of a dim
argument, a broadcast second tensor, a second value for a default (1.0 for a factor, 0.0
for an offset, any other number a backward may hard-code), complex inputs.

Each candidate is probed once (gradverify.inference.search.probe) and kept only
where forward accepts it and gives a finite output, so that a case outside forward's
domain is dropped here, never reported as a finding. A broadcast case is kept whenever
forward accepts it: a backward that cannot reduce a broadcast gradient is a bug the checks
then show. Probing stops at a time budget.
"""

from __future__ import annotations

import functools
import inspect
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gradverify.inference.choice import (
    LITERAL,
    NUMBER,
    TENSOR,
    Choice,
    as_complex,
    is_float_tensor,
    with_choice,
)
from gradverify.inference.reading.called import merged, target_points
from gradverify.inference.reading.parameters import rank_stated
from gradverify.inference.reading.source import BranchPoints, branch_points, is_mask, source_facts
from gradverify.inference.rules.order import kept as keeps_order
from gradverify.inference.rules.structure import unstructured
from gradverify.inference.search.probe import probe
from gradverify.inference.search.reach import fitted, reaching, relabeled

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

BUDGET = 2.0  # seconds of probing for the extra cases of one target
MOST = 10  # extra cases at most
RANKS = ((3, 5), (2, 3, 4))  # shapes for an elementwise Function first tried at rank 1
DIM_NAMES = ("dim", "axis")
# A default that hides a forgotten use, and the value that shows it.
HIDING = {1.0: 2.0, 0.0: 0.5}
# The wide case draws from [-(2m + 1), 2m + 1], m the largest branch point of forward and
# backward up to REACH, where it is 1 or more: every branch point lies well inside, with
# elements on both sides of it. Larger ones are masks and sentinels (-1e9, 255 levels).
REACH = 100.0
# An epsilon (eps, epsilon, norm_eps) small by default hides a backward that forgets it.
EPSILON = re.compile(r"(^|_)(eps|epsilon)($|_)", re.IGNORECASE)
LARGE_EPSILON = 0.5
WIDE_ELEMENTS = 16  # a rank-1 first tensor's length there, so that each region gets elements
# The largest output magnitude the wide case keeps: central differences with a step of 1e-6
# carry a rounding error of about |output| * 1e-10, a tenth of the tolerance's 1e-5 here
# (exp(20) in a KL term, reached by a clamp at 30, made a correct backward fail).
WIDE_SCALE = 1e4

Case = tuple[str, tuple[Choice, ...]]


@dataclass(frozen=True)
class Candidate:
    """One extra case to probe. Kept where forward accepts it and backward runs well; kept
    too where backward misbehaves, when that is backward's to answer for: only the argument
    the case varies gets a gradient of another shape (`lenient`: a broadcast bias backward
    must reduce), or backward raises or misfits where a case that `proves` its rank (the
    same rank, another dim or no broadcast) ran well."""

    label: str
    choices: list[Choice]
    lenient: tuple[int, ...] = ()  # arguments whose misbehaving gradient is a finding
    needs: str | None = None  # kept misbehaving if a case proving this rank ran well
    proves: str | None = None  # running well, it proves this rank
    bounded: bool = False  # dropped where forward's outputs grow past WIDE_SCALE


def widened(target: Target, base: Sequence[Choice]) -> tuple[Case, ...]:
    """The extra cases forward accepts, within the probe budget; then the values they
    change, all at once (a bug that needs two of them)."""
    deadline = time.perf_counter() + BUDGET
    kept: list[tuple[int, Case]] = []
    waiting: list[tuple[int, Case, str]] = []  # backward misbehaved: kept if its rank is proven
    proven: set[str] = set()  # ranks a case ran well at
    seen = {tuple(choice.item.__repr__() for choice in base)}
    base_emptied = functools.cache(lambda: probe(target, base).emptied is not None)

    def consider(position: int, candidate: Candidate) -> None:
        choices = fitted(target, candidate.choices)
        key = tuple(choice.item.__repr__() for choice in choices)
        if key in seen:
            return
        seen.add(key)
        if not keeps_order(target, choices):
            return  # breaks an order the code states (lo < hi): a failed guess, not a case
        outcome = probe(target, choices, randomness=True)
        case = (relabeled(candidate.label, candidate.choices, choices), tuple(choices))
        if outcome.stage == "forward" or outcome.random or outcome.misfit:
            return  # outside forward's domain or contract, or forward is random there
        if outcome.emptied is not None and not base_emptied():
            return  # a slice comes out empty here, not on the base case (inference/search/emptied.py)
        if candidate.bounded and outcome.scale > WIDE_SCALE:
            return  # finite differences there would measure float64 rounding
        misfits = set(outcome.wrong_shape)
        if outcome.stage == "done" and not misfits:
            kept.append((position, case))
            proven.add(candidate.proves or "")
        elif outcome.stage == "done" and candidate.lenient and misfits <= set(candidate.lenient):
            kept.append((position, case))  # backward misbehaves on what forward accepted
        elif candidate.needs is not None:
            waiting.append((position, case, candidate.needs))
        # else: perhaps a shape forward was not written for: not ours to judge

    position = 0
    for position, candidate in enumerate(candidates(target, base)):
        if len(kept) >= MOST or time.perf_counter() > deadline:
            break
        consider(position, candidate)
    kept += [(position, case) for position, case, rank in waiting if rank in proven]
    kept.sort(key=lambda kept_case: kept_case[0])
    for offset, candidate in enumerate(_combined(base, [case for _, case in kept])):
        if len(kept) >= MOST or time.perf_counter() > deadline:
            break
        consider(position + 1 + offset, candidate)
    return tuple(case for _, case in kept[:MOST])


def _combined(base: Sequence[Choice], kept: Sequence[Case]) -> Iterator[Candidate]:
    """The values the kept cases change (a second value, a tensor for a None), all at once:
    on the base case, and on the first case at another dim (keepdim=True with dim=0). A
    backward wrong only for `bias` given with `approximate=True` passes each alone."""
    changes: dict[int, tuple[str, Choice]] = {}
    for label, choices in kept:
        changed = [i for i, (c, b) in enumerate(zip(choices, base, strict=True)) if c != b]
        if len(changed) == 1 and base[changed[0]].kind != TENSOR:
            changes.setdefault(changed[0], (label, choices[changed[0]]))
    if len(changes) > 1:
        merged = [changes[i][1] if i in changes else c for i, c in enumerate(base)]
        yield Candidate(", ".join(label for label, _ in changes.values()), merged)
    values = {i: change for i, change in changes.items() if base[i].value is not None}
    dims = next((case for case in kept if ", dim=" in case[0] or ", axis=" in case[0]), None)
    if dims is not None and values:
        label, choices = dims
        merged = [values[i][1] if i in values else c for i, c in enumerate(choices)]
        yield Candidate(", ".join([label, *(label for label, _ in values.values())]), merged)


def candidates(target: Target, base: Sequence[Choice]) -> Iterator[Candidate]:
    """Each extra case to probe, the most telling first."""
    points = merged(branch_points(*_own_methods(target)), target_points(target))
    for label, choices in unstructured(base):  # a finding only here is the contract's
        yield Candidate(label, choices)
    yield from _defaults(base)
    yield from _wide(target, base, points)
    for extra in reaching(target, base):  # gradverify.inference.search.reach
        yield Candidate(extra.label, extra.choices, lenient=extra.lenient)
    yield from _ranks_and_dims(base)
    yield from _batched(base)
    yield from _broadcasts(base)
    yield from _optional_tensors(base)
    if source_facts(target).complex:
        yield _complex(base)
    yield from _other_defaults(base, points.strings)


def _defaults(base: Sequence[Choice]) -> Iterator[Candidate]:
    """A second value for each float default that hides a bug: scale=1.0 -> 2.0, shift=0.0 -> 0.5."""
    for index, choice in enumerate(base):
        value = choice.value
        if choice.kind != LITERAL or type(value) is not float or value not in HIDING:
            continue
        other = HIDING[value]
        changed = Choice(choice.name, NUMBER, value=other, reason=f"{value} by default hides a bug")
        yield Candidate(f"{choice.name}={other}", with_choice(base, index, changed))


def _wide(target: Target, base: Sequence[Choice], points: BranchPoints) -> Iterator[Candidate]:
    """The tensors shaped like the first drawn from a range that holds every number forward
    and backward compare with: `x.clamp(-3, 3)`, `x > 6`, a threshold of 20 by default. A
    mask or branch past [-1, 1] is otherwise never reached."""
    first = _first_float(base)
    reach = max((m for m in _literals(target, base, points) if m <= REACH), default=0.0)
    if first is None or not first.shape or reach < 1:
        return  # nothing past the base case's range of [-1, 1] to reach
    high = 2 * reach + 1
    low = first.low if first.low > 0 else -high  # a positive domain stays positive
    shape = (WIDE_ELEMENTS,) if len(first.shape) == 1 else first.shape
    widened = [
        replace(c, shape=shape, low=low, high=high)
        if _like(c, first)
        else replace(c, shape=shape)
        if _mask_of(c, first)
        else c
        for c in base
    ]
    yield Candidate(f"{first.name} {list(shape)} in [{low:g}, {high:g}]", widened, bounded=True)
    yield from _wide_others(base, points, first)


def _wide_others(
    base: Sequence[Choice], points: BranchPoints, first: Choice
) -> Iterator[Candidate]:
    """Each other floating tensor a called helper or kernel compares with a literal past
    [-1, 1] (by what the helper's compared values derive from), drawn past it in its own
    case: a tensor shaped unlike the first is not widened with it."""
    for index, choice in enumerate(base):
        sizes = [size for name, size in points.by_input if name == choice.name and size <= REACH]
        if not sizes or max(sizes) < 1 or not is_float_tensor(choice) or _like(choice, first):
            continue
        high = 2 * max(sizes) + 1
        low = choice.low if choice.low > 0 else -high
        changed = replace(choice, low=low, high=high)
        label = f"{choice.name} {list(choice.shape)} in [{low:g}, {high:g}]"
        yield Candidate(label, with_choice(base, index, changed), bounded=True)


def _literals(target: Target, base: Sequence[Choice], points: BranchPoints) -> tuple[float, ...]:
    """What forward and backward compare with or clamp to: number literals, and the numbers
    forward gets by default for a parameter compared so (`x > threshold`, threshold=20.0)."""
    defaults = tuple(
        abs(float(c.value))
        for c in base
        if c.kind == LITERAL and type(c.value) in (int, float) and c.name in points.names
    )
    return points.magnitudes + defaults + _constants(target, points.names)


def _own_methods(target: Target) -> tuple[Any, ...]:
    """forward and backward of a Function; the callable itself otherwise."""
    if target.is_function:
        return (getattr(target.obj, "forward", None), getattr(target.obj, "backward", None))
    return (target.obj,)


def _constants(target: Target, names: frozenset[str]) -> tuple[float, ...]:
    """The numbers that names compared with hold as constants of the Function's class or
    of its module (`CUT = 5.0`, `x.abs() > CUT`), as the source reads them."""
    scopes = [vars(target.obj) if target.is_function and isinstance(target.obj, type) else {}]
    functions = [f for f in _own_methods(target) if f is not None]
    scopes += [getattr(inspect.unwrap(f), "__globals__", {}) for f in functions]
    found = []
    for name in names:
        value = next((scope[name] for scope in scopes if name in scope), None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            found.append(abs(float(value)))
    return tuple(found)


def _other_defaults(
    base: Sequence[Choice], strings: frozenset[tuple[str, str]]
) -> Iterator[Candidate]:
    """A second value for each other number or bool forward gets by default (a slope of
    0.01, 8 bits, keepdim=False): a backward that hard-codes the default passes on it alone.
    An epsilon gets a large one, where a backward that forgets it shows."""
    for index, choice in enumerate(base):
        value = choice.value
        if choice.kind != LITERAL or choice.name in DIM_NAMES:
            continue
        if type(value) is str:
            yield from _other_strings(base, index, strings)
            continue
        other: float | bool
        if type(value) is bool:
            other = not value
        elif type(value) is float and EPSILON.search(choice.name) and 0 < value < LARGE_EPSILON:
            other = LARGE_EPSILON
        elif type(value) is float and value not in HIDING and abs(value) < float("inf"):
            other = value * 2
        elif type(value) is int:
            other = value + 1
        else:
            continue
        reason = f"a second value beside the default {value!r}"
        changed = Choice(choice.name, NUMBER, value=other, reason=reason)
        label = f"{choice.name}={_shown(other)}"
        yield Candidate(label, with_choice(base, index, changed))


def _shown(value: object) -> str:
    """A value as a case's label shows it: 0.666667 for 2/3, 2.0, True, 9."""
    if isinstance(value, float):
        return repr(float(f"{value:.6g}"))
    return repr(value)


def _other_strings(
    base: Sequence[Choice], index: int, strings: frozenset[tuple[str, str]]
) -> Iterator[Candidate]:
    """Each other string forward or backward compares a string default with
    (`reduction == "sum"` beside reduction="mean"): a path the default never takes."""
    choice = base[index]
    for name, text in sorted(strings):
        if name != choice.name or text == choice.value:
            continue
        reason = f"a second value beside the default {choice.value!r}"
        changed = Choice(choice.name, NUMBER, value=text, reason=reason)
        yield Candidate(f"{choice.name}={text!r}", with_choice(base, index, changed))


def _optional_tensors(base: Sequence[Choice]) -> Iterator[Candidate]:
    """A tensor for each parameter that is None by default and named like a bias or
    annotated a Tensor (forward's `bias=None`): its gradient is otherwise never checked.
    Shaped as a Linear's bias (the weight's rows), else as the last dim of the first tensor
    (a per-feature bias); a misbehaving gradient of it is a finding. One named like a mask
    (`mask=None`) gets a bool mask of the first tensor's shape."""
    first = _first_float(base)
    if first is None or not first.shape:
        return
    weights = [c.shape[0] for c in base if is_float_tensor(c) and c is not first and c.shape]
    # A base whose tensor backward's gradient bent to 0-d has shapes inference chose for
    # backward's sake: a misfit there is not the new tensor's to answer for.
    bent = any(is_float_tensor(c) and not c.shape for c in base)
    for index, choice in enumerate(base):
        if choice.kind != LITERAL or choice.value is not None:
            continue
        if is_mask(choice.name):  # `mask=None`: a bool mask shaped like what it masks
            given = Choice(
                choice.name, TENSOR, first.shape, None, "a mask where None is the default",
                False, "bool", 0, 1,
            )  # fmt: skip
            changed = with_choice(base, index, given)
            yield Candidate(f"{choice.name} {list(first.shape)}", changed)
            continue
        if not choice.optional_tensor:
            continue
        for size in dict.fromkeys([*weights[:1], first.shape[-1]]):
            given = Choice(
                choice.name, TENSOR, (size,), reason="a tensor where None is the default"
            )
            label = f"{choice.name} [{size}]"
            changed = with_choice(base, index, given)
            yield Candidate(label, changed, lenient=() if bent else (index,))


def _batched(base: Sequence[Choice]) -> Iterator[Candidate]:
    """A leading batch dim for a matrix first tensor beside tensors of other shapes (a
    Linear's input [2, 4] with its weight [3, 4] -> input [2, 2, 4]): a backward that
    assumes two dims (`grad.t() @ x`, `grad[-1]`) is wrong there."""
    first = _first_float(base)
    if first is None or len(first.shape) != 2 or all(_like(c, first) for c in base if c.shape):
        return
    if rank_stated(first.reason):  # `scores: (N, C)`: a batch of them is outside the contract
        return
    shape = (2, *first.shape)
    batched = [replace(c, shape=shape) if _like(c, first) else c for c in base]
    name = f"{first.name} {list(shape)}"
    yield Candidate(name, batched, proves=name)


def _ranks_and_dims(base: Sequence[Choice]) -> Iterator[Candidate]:
    """Ranks 2 and 3 for the tensors shaped like the first; with every value of a dim."""
    first = _first_float(base)
    if first is None or len(first.shape) != 1:
        return
    dims = [i for i, c in enumerate(base) if c.name in DIM_NAMES and _is_int(c.value)]
    for shape in RANKS:
        reshaped = [
            replace(c, shape=shape) if _like(c, first) or _mask_of(c, first) else c for c in base
        ]
        name = f"{first.name} {list(shape)}"
        if not dims:
            yield Candidate(name, reshaped, proves=name)
            continue
        # rank 2: every dim; rank 3: the middle one, which neither end of rank 2 reaches
        values = range(len(shape)) if len(shape) == 2 else (1,)
        for value in values:
            changed = list(reshaped)
            for i in dims:
                changed[i] = Choice(base[i].name, NUMBER, value=value, reason="every valid dim")
            # forward takes this rank with another dim: a backward failing on this one is wrong
            label = f"{name}, {base[dims[0]].name}={value}"
            yield Candidate(label, changed, needs=name, proves=name)


def _broadcasts(base: Sequence[Choice]) -> Iterator[Candidate]:
    """The tensors after the first, shaped like it, as a bias of its last dim: x [3, 5], b [5]."""
    first = _first_float(base)
    if first is None or len(first.shape) != 1:
        return
    rows = RANKS[0]
    later = [i for i, c in enumerate(base) if _like(c, first) and c is not first]
    for i in later:
        changed = [replace(c, shape=rows) if _like(c, first) else c for c in base]
        changed[i] = replace(base[i], shape=rows[-1:])
        label = f"{first.name} {list(rows)}, {base[i].name} {list(rows[-1:])}"
        yield Candidate(label, changed, lenient=(i,), needs=f"{first.name} {list(rows)}")


def _complex(base: Sequence[Choice]) -> Candidate:
    """Every float tensor complex (forward conjugates, or takes real and imaginary parts)."""
    return Candidate("complex128", as_complex(base))


def _mask_of(choice: Choice, first: Choice) -> bool:
    return choice.dtype == "bool" and choice.shape == first.shape


def _first_float(base: Sequence[Choice]) -> Choice | None:
    return next((c for c in base if is_float_tensor(c)), None)


def _like(choice: Choice, first: Choice) -> bool:
    return choice.kind == TENSOR and choice.dtype == first.dtype and choice.shape == first.shape


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
