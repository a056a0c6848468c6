"""A recorded case as a base to add to: what the run did not show.

- the gradient of every float input, whatever requires_grad it had in the run, unless
  backward returns None for it (one probe run tells);
- the cases inference adds to its own base (gradverify.inference.cases.widened: other values
  of literals and defaults, other ranks, broadcasts, a wide range), on the recorded inputs;
- every other dim of the first float tensor, for a `dim`/`axis` literal;
- the ends of the range a float literal took across the calls a case stands for.

An added case keeps the `structure:` of every recorded input that has one (an SPD matrix
stays SPD: a plain twin would fail a correct Function on inputs outside its contract).

Each added case is probed (forward and backward run well-formed on it) before it is kept,
as inference keeps its own; the ends of a recorded range were run by the program itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gradverify.inference.cases import DIM_NAMES, widened
from gradverify.inference.choice import LITERAL, TENSOR, Choice, is_float_tensor, with_choice
from gradverify.inference.search.probe import probe
from gradverify.record.cases import RecordedCase, argument_label
from gradverify.record.readable import readable
from gradverify.spec.models import FLOATING_DTYPES

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

KEPT = "kept"  # a choice inference leaves as it is: a constant, index values, a complex tensor


@dataclass(frozen=True)
class Kept(Choice):
    """An input inference does not vary: written as it was recorded (`kept`)."""

    kept: Any = None

    @property
    def item(self) -> Any:
        return self.kept

    def describe(self) -> str:
        return f"{self.name}: as recorded"


def without_gradient(
    target: Target, case: RecordedCase, names: Sequence[str], required: Sequence[bool]
) -> frozenset[int]:
    """The float inputs of `case` for which backward returns None (on one probe run), of
    those that did not require grad in the run (`required`: whether each did)."""
    promoted = [
        index
        for index, item in enumerate(case.inputs)
        if _floating(item) and "requires_grad" not in item and not required[index]
    ]
    if not promoted:
        return frozenset()
    choices = [
        Kept(argument_label(names, i), KEPT, kept=item) for i, item in enumerate(case.inputs)
    ]
    try:
        outcome = probe(target, choices)
    except Exception:  # an input no tensor can be built from: every gradient is asked for
        return frozenset()
    if outcome.stage != "done":
        return frozenset()
    return frozenset(index for index in promoted if index in outcome.none)


def added_cases(
    target: Target,
    case: RecordedCase,
    names: Sequence[str],
    defaults: Mapping[str, Any],
    ends: Mapping[int, Sequence[float]],
    infer: bool = True,
) -> list[RecordedCase]:
    """The cases added to the recorded `case`: the ends of its literals' recorded ranges,
    then (with `infer`) what inference adds and the other dims; none equal to another's
    inputs."""
    added = [_end_case(case, names, i, value) for i, values in ends.items() for value in values]
    if not infer or not all(device_free(item) for item in case.inputs):
        return added  # probes run here, on the CPU: a recorded cuda case keeps its own device
    base = [_choice(argument_label(names, i), item) for i, item in enumerate(case.inputs)]
    base += _defaults_after(names, defaults, len(base))
    try:
        found = list(widened(target, base)) + list(_dims_kept(target, base))
    except Exception:  # what the user's code does outside a probe: the recorded cases stand
        found = []
    seen = [case.inputs, *(other.inputs for other in added)]
    labels = {other.variant for other in added}  # p=3.0 at an end of the recorded range
    for label, choices in found:
        inputs = [choice.item for choice in choices]
        if inputs in seen or label in labels or not _keeps_structure(base, choices):
            continue
        seen.append(inputs)
        notes = [choice.describe() for choice in choices]
        added.append(RecordedCase(f"{case.name}: {label}", case.call, inputs, notes, {}, (), label))
    return added


def _keeps_structure(base: Sequence[Choice], choices: Sequence[Choice]) -> bool:
    """Whether every structured input of `base` keeps its structure in `choices`."""
    return all(
        before.structure is None
        or (changed.kind == TENSOR and changed.structure == before.structure)
        for before, changed in zip(base, choices, strict=False)
    )


def device_free(item: Any) -> bool:
    return not (isinstance(item, dict) and item.get("device", "cpu") != "cpu")


def _end_case(case: RecordedCase, names: Sequence[str], index: int, value: float) -> RecordedCase:
    label = f"{argument_label(names, index)}={readable(value)!r}"
    inputs = [readable(value) if i == index else item for i, item in enumerate(case.inputs)]
    notes = list(case.notes)
    notes[index] = f"{argument_label(names, index)}: an end of the range recorded"
    return RecordedCase(f"{case.name}: {label}", case.call, inputs, notes, {}, (), label)


def _choice(name: str, item: Any) -> Choice:
    """What inference may vary: a float tensor drawn from a range (float64, as the checks run
    it), a literal; anything else is kept as recorded (floats made float64 alike)."""
    if not isinstance(item, dict):
        return Choice(name, LITERAL, value=item)
    if item.get("dtype") in FLOATING_DTYPES and "shape" in item:
        return Choice(
            name, TENSOR, tuple(item["shape"]), low=item.get("low", -1.0),
            high=item.get("high", 1.0), requires_grad=item.get("requires_grad", True),
            structure=item.get("structure"),
        )  # fmt: skip
    if item.get("dtype") in FLOATING_DTYPES:
        item = {**item, "dtype": "float64"}
    return Kept(name, KEPT, kept=item)


def _defaults_after(names: Sequence[str], defaults: Mapping[str, Any], given: int) -> list[Choice]:
    """The literal defaults of the parameters after the recorded arguments (what a run that
    left them to their defaults hides), up to the first that is not a literal."""
    choices = []
    for name in names[given:]:
        value = defaults.get(name, ...)
        if value is not None and not isinstance(value, bool | int | float | str):
            break
        choices.append(Choice(name, LITERAL, value=value))
    return choices


def _dims_kept(target: Target, base: Sequence[Choice]) -> Iterator[tuple[str, list[Choice]]]:
    """Each other dim of the first float tensor, for a `dim`/`axis` literal, where forward
    and backward run well-formed (inference tries dims of a rank-1 tensor only)."""
    first = next((choice for choice in base if is_float_tensor(choice)), None)
    if first is None or len(first.shape) < 2:
        return
    rank = len(first.shape)
    for index, choice in enumerate(base):
        value = choice.value
        if choice.kind != LITERAL or choice.name not in DIM_NAMES:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not -rank <= value < rank:
            continue
        for dim in range(rank):
            if dim == value % rank:
                continue
            changed = replace(choice, value=dim, reason="another dim than the run's")
            choices = with_choice(base, index, changed)
            outcome = probe(target, choices, randomness=True)
            if outcome.stage == "done" and not outcome.wrong_shape and not outcome.random:
                yield f"{choice.name}={dim}", choices


def _floating(item: Any) -> bool:
    return isinstance(item, dict) and item.get("dtype") in FLOATING_DTYPES
