"""One trial run on candidate inputs: forward, then backward with ones as grad_outputs, and
how far it got (inference keeps the candidates with which it gets to the end)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gradverify.inference.choice import CASE
from gradverify.inference.search.emptied import watching
from gradverify.inference.search.precision import cast

if TYPE_CHECKING:
    from gradverify.inference.choice import Choice
    from gradverify.target.loaded import Target

NOT_FINITE = "forward's output is not finite"
NO_TENSOR = "forward returned no tensor"
# The Python types of what inference passes, as a TypeError names them.
GUESSED_KINDS = (
    "Tensor",
    "float",
    "int",
    "bool",
    "list",
    "tuple",
    "str",
    "builtin_function_or_method",
)
# What torch says when backward combines tensors whose sizes disagree: on a guessed shape,
# a shape backward was not written for (a coefficient per half dim guessed at full length).
SIZE_MISMATCH = (
    "must match the size of tensor",
    "shapes cannot be multiplied",
    "size mismatch",
    "Sizes of tensors must match",
    "The expanded size of the tensor",
    "is invalid for input of size",
)
STAGES = ("forward", "backward", "done")  # how far a probe got
RANDOM_SEEDS = (1, 2, 3)  # forward under each: other outputs mean it draws random numbers


@dataclass(frozen=True)
class ProbeOutcome:
    """How far one trial run of forward and backward got, and what it found."""

    stage: str  # "forward" or "backward" (where it failed), or "done"
    error: str | None = None
    none: tuple[int, ...] = ()  # tensor arguments whose gradient backward left None
    wrong_shape: tuple[int, ...] = ()  # arguments whose gradient has another shape
    scale: float = 0.0  # the largest magnitude among forward's float outputs
    random: bool = False  # forward gave other outputs under other seeds (asked for only)
    # The inputs break the Function's contract though forward ran: forward returned no
    # tensor, or backward raised a TypeError (a tensor where a function belongs): a failed
    # guess, never a finding.
    misfit: bool = False
    outputs: tuple[tuple[int, ...], ...] = ()  # the shapes of forward's tensor outputs
    # The shape of each argument's gradient where it misfits: (index, shape) pairs.
    gradient_shapes: tuple[tuple[int, tuple[int, ...]], ...] = ()
    size_error: bool = False  # backward raised a RuntimeError of sizes that disagree
    # A slice forward or backward took came out empty of a tensor with elements (`[..., 4:]
    # of a [2, 4] tensor`): a guess below the sizes the code slices for
    # (gradverify.inference.search.emptied), less preferred.
    emptied: str | None = None


def probe(target: Target, choices: Sequence[Choice], randomness: bool = False) -> ProbeOutcome:
    """One forward, and backward with ones as grad_outputs, on the inputs of `choices`;
    with `randomness`, forward under two more seeds too, to tell whether it is random.

    Warnings the user's code raises on a guess (`x.T` of a 3-d tensor) are silenced: they
    are about inputs gradverify tried, not the user's; the checks' runs keep theirs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _probe(target, choices, randomness)


def _probe(target: Target, choices: Sequence[Choice], randomness: bool) -> ProbeOutcome:
    from pydantic import ValidationError

    from gradverify.inputs import build_inputs
    from gradverify.spec.models import Case

    try:
        case = Case.model_validate({"name": CASE, "inputs": [c.item for c in choices]})
    except ValidationError as invalid:  # a degenerate guess (low == high): a reason, not a crash
        reasons = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in invalid.errors())
        return ProbeOutcome("forward", f"no valid inputs of this guess: {reasons}")
    arguments = cast(build_inputs(case, 0))  # a kernel's dtype and device (precision.py)
    with watching() as emptied:  # a slice that came out empty on the way, however it ended
        outcome = _trial(target, choices, arguments, randomness)
    return replace(outcome, emptied=emptied())


def _trial(
    target: Target, choices: Sequence[Choice], arguments: Sequence[Any], randomness: bool
) -> ProbeOutcome:
    """forward, then backward, on `arguments`; how far they got."""
    import torch

    with torch.random.fork_rng(devices=[]):  # the user's global RNG is left as it was
        if randomness:
            torch.manual_seed(RANDOM_SEEDS[0])
        try:
            outputs = target.call(*arguments)
        except Exception as error:
            return ProbeOutcome("forward", _first_line(error))
        items = outputs if isinstance(outputs, tuple | list) else (outputs,)
        tensors = [o for o in items if isinstance(o, torch.Tensor)]
        if not tensors and not _returns_nothing(target):
            return ProbeOutcome("forward", f"{NO_TENSOR} (got {type(outputs).__name__})")
        if any(o.is_floating_point() and not torch.isfinite(o).all() for o in tensors):
            return ProbeOutcome("forward", NOT_FINITE)
        floats = [o.detach() for o in tensors if o.is_floating_point() or o.is_complex()]
        scale = max((float(o.abs().max()) for o in floats if o.numel()), default=0.0)
        random = randomness and _random(target, arguments, tensors)
        shapes = tuple(tuple(o.shape) for o in tensors)
        if not any(o.requires_grad for o in tensors):
            return ProbeOutcome("done", scale=scale, random=random, outputs=shapes)
        try:
            gradients = _gradients(target, arguments, items)
        except TypeError as error:
            misfit = _misfit(error, choices)
            return ProbeOutcome("backward", f"backward raised {_first_line(error)}", misfit=misfit)
        except ValueError as error:  # `B, C = control_var` of a guessed [3, 3]: a misfit
            misfit = "values to unpack" in str(error)
            return ProbeOutcome("backward", f"backward raised {_first_line(error)}", misfit=misfit)
        except RuntimeError as error:
            sizes = any(text in str(error) for text in SIZE_MISMATCH)
            line = f"backward raised {_first_line(error)}" if sizes else _first_line(error)
            return ProbeOutcome("backward", line, size_error=sizes)
        except Exception as error:
            return ProbeOutcome("backward", _first_line(error))
    none, wrong, misfitting = [], [], []
    for index, argument in enumerate(arguments):
        gradient = gradients[index] if index < len(gradients) else None
        if not isinstance(argument, torch.Tensor):
            if gradient is not None:
                wrong.append(index)
        elif gradient is None:
            none.append(index)
        elif not isinstance(gradient, torch.Tensor) or gradient.shape != argument.shape:
            wrong.append(index)
            if isinstance(gradient, torch.Tensor):
                misfitting.append((index, tuple(gradient.shape)))
    return ProbeOutcome(
        "done", None, tuple(none), tuple(wrong), scale, random, False, shapes, tuple(misfitting)
    )


def _returns_nothing(target: Target) -> bool:
    """A custom op whose schema returns nothing (`-> ()`) works only through the arguments it
    declares written (mutates_args): no tensor back is its contract, not a failed guess."""
    return target.op is not None and not target.op._schema.returns


def _random(target: Target, arguments: Sequence[Any], first: Sequence[Any]) -> bool:
    """Whether forward, whose outputs under the first of RANDOM_SEEDS are `first`, gives
    others under the other seeds (dropout, a random slope): such a case's finite
    differences would measure the noise. Seeded, so that the answer never depends on the
    state of the generator (the caller's is restored by the probe's fork_rng)."""
    import torch

    for seed in RANDOM_SEEDS[1:]:
        torch.manual_seed(seed)
        try:
            outputs = target.call(*arguments)
        except Exception:
            return False
        items = outputs if isinstance(outputs, tuple | list) else (outputs,)
        run = [o for o in items if isinstance(o, torch.Tensor)]
        if len(run) != len(first) or any(
            a.shape != b.shape or not torch.equal(a.detach(), b.detach())
            for a, b in zip(first, run, strict=True)
        ):
            return True
    return False


def _gradients(target: Target, arguments: Sequence[Any], outputs: Sequence[Any]) -> tuple[Any, ...]:
    """backward's own return where it can be called directly, so that autograd reshapes nothing."""
    import torch

    from gradverify.numerics.graph import backward_return

    ones = [torch.ones_like(o) if isinstance(o, torch.Tensor) else None for o in outputs]
    return backward_return(target, outputs, arguments, ones)


def _misfit(error: TypeError, choices: Sequence[Choice]) -> bool:
    """A TypeError about a kind gradverify guesses (`'Tensor' object is not callable`, a
    float where a tuple belongs), not about a None of backward's own making; or one that a
    function gradverify guessed raised when the user's code called it (`sin() takes 1
    positional argument but 2 were given`): the user's code calls it another way."""
    text = str(error)
    guessed = {c.value.rpartition(":")[2] for c in choices if c.kind == "callable"}
    if any(text.startswith((f"{name}() ", f"{name}(): ")) for name in guessed if name):
        return True
    return "NoneType" not in text and any(f"'{kind}'" in text for kind in GUESSED_KINDS)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")
