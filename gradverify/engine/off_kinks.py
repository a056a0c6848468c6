"""Keep randomly drawn inputs off non-differentiable points.

A generated value that lands within eps of a kink (ReLU at 0) makes central differences
meaningless there; such elements are drawn again, a few times, and the report says so with
true counts. Explicit `values` are never changed: a user who writes 0.0 means 0.0.

An elementwise forward shows every element near a kink at once (`numerics/diagonal.py`): a few
forward calls per try, whatever the size and the number of kinks. A forward that mixes
elements needs group testing, on a budget of probes; when the budget runs out the note says
so. Whatever is still near a kink afterwards, the checks find again and judge as kinks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gradverify.inputs import fresh_copies, redraw_values
from gradverify.numerics import seeded
from gradverify.numerics.diagonal import diagonal_kinks, elementwise_output, is_elementwise
from gradverify.numerics.kinks import OFFSETS, nondifferentiable_rows
from gradverify.numerics.noise import faint_rows, noise_rows
from gradverify.numerics.sampling import Evaluate, line_through, sample
from gradverify.spec.models import Case, FunctionSpec, TensorInput
from gradverify.target.loaded import Target
from gradverify.usercode import UserCodeError, call_forward

MAX_TRIES = 5
# Group testing costs five forward calls and O(n) work per probe (see `grouped_near_kinks`);
# beyond this many elements of a forward that mixes them, rely on the checks' kink handling.
GROUP_LIMIT = 100_000
# At most this many groups probed per argument and try.
MAX_PROBES = 200


@dataclass(frozen=True)
class Near:
    """Elements of one argument found within eps of a kink, and whether the search was whole."""

    columns: list[int]
    complete: bool = True  # False: group testing ran out of probes, there may be more

    @property
    def remaining(self) -> bool:
        """Some element is, or may still be, within eps of a kink."""
        return bool(self.columns) or not self.complete


def settle_inputs(
    target: Target, case: Case, arguments: tuple[Any, ...], spec: FunctionSpec, seed: int
) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """`arguments` with generated elements near kinks drawn again, and notes saying so."""
    if spec.gradient != "exact":
        return arguments, ()
    # On the CPU whatever the inputs' device: redraw_values draws there, as build_inputs does.
    generator = seeded.generator(seed + 104_729)
    settled = list(arguments)
    notes: list[str] = []
    for index, item in enumerate(case.inputs):
        argument = settled[index]
        if not _generated(item, argument):
            continue
        assert isinstance(item, TensorInput)
        try:
            note = _settle_argument(target, settled, index, item, spec, generator)
        except UserCodeError:
            return arguments, ()  # forward crashes: the checks will say so
        if note:
            notes.append(note)
    return tuple(settled), tuple(notes)


def _generated(item: Any, argument: Any) -> bool:
    return (
        isinstance(item, TensorInput)
        and item.values is None
        and isinstance(argument, torch.Tensor)
        and argument.is_floating_point()
        and argument.requires_grad
        and argument.numel() > 0
    )


def _evaluate(target: Target) -> Evaluate:
    def evaluate(*values: Any) -> list[torch.Tensor]:
        # A complex output is its (real, imaginary) pairs: a kink may be in either part.
        return [
            torch.view_as_real(o.resolve_conj()) if o.is_complex() else o
            for o in call_forward(target.call, values)
            if isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex())
        ]  # fmt: skip

    return evaluate


def _settle_argument(
    target: Target,
    settled: list[Any],
    index: int,
    item: TensorInput,
    spec: FunctionSpec,
    generator: torch.Generator,
) -> str | None:
    evaluate = _evaluate(target)
    probe = fresh_copies(settled, torch.float64)
    base = elementwise_output(evaluate, probe, index)
    elementwise = base is not None and is_elementwise(evaluate, probe, index, base)
    if not elementwise and settled[index].numel() > GROUP_LIMIT:
        return None
    redrawn = torch.zeros(settled[index].numel(), dtype=torch.bool, device=settled[index].device)
    tries = 0
    near = near_kinks(evaluate, settled, index, spec, elementwise, base)
    while near.columns and tries < MAX_TRIES:
        tries += 1
        current = settled[index]
        mask = torch.zeros(current.numel(), dtype=torch.bool, device=current.device)
        mask[near.columns] = True
        redrawn |= mask
        fresh = redraw_values(current.detach(), item.low, item.high, generator)
        values = torch.where(mask.reshape(current.shape), fresh, current.detach())
        settled[index] = values.requires_grad_(current.requires_grad)
        near = near_kinks(evaluate, settled, index, spec, elementwise)
    return _note(target, index, int(redrawn.sum()), tries, near)


def near_kinks(
    evaluate: Evaluate,
    arguments: Sequence[Any],
    index: int,
    spec: FunctionSpec,
    elementwise: bool,
    base: torch.Tensor | None = None,
) -> Near:
    """Elements of argument `index` within eps of a kink of some output of `evaluate` (probed
    in float64): all of them at once for an elementwise forward, else by group testing.
    `base`: the outputs at `arguments`, when the caller has them (one forward call fewer)."""
    probe = fresh_copies(arguments, torch.float64)
    tol = spec.tolerance
    if elementwise:
        found = diagonal_kinks(evaluate, probe, index, tol.eps, tol.atol, tol.rtol, base)
        return Near(found.columns.tolist())
    return grouped_near_kinks(evaluate, probe, index, spec)


def grouped_near_kinks(
    evaluate: Evaluate, probe: Sequence[Any], index: int, spec: FunctionSpec
) -> Near:
    """Group testing: the output is sampled along a random ±1 direction over a whole group of
    elements (five forward calls); a kink of any member shows as a kink along the direction.
    Only groups that show one are halved, so inputs without kinks cost five forward calls,
    and each element near a kink about 5·log2(n). Rounding noise (a forward computing in
    float32) is no kink (`numerics/noise.py`): once seen, roughness as faint as it is ignored.
    """
    argument = probe[index]
    generator = seeded.generator(0)
    signs = torch.randint(0, 2, (argument.numel(),), generator=generator, device="cpu")
    direction = (signs * 2 - 1).to(device=argument.device, dtype=torch.float64)
    magnitude = probe[index].detach().abs().reshape(-1)
    noisy = False

    def kinked(group: torch.Tensor) -> bool:
        nonlocal noisy
        eps = spec.tolerance.eps
        along = torch.zeros_like(direction)
        along[group] = direction[group]
        line = line_through(evaluate, probe, index, along)
        values = sample(line, eps)
        tolerance = _tolerance(values, spec)
        flagged = nondifferentiable_rows(values, eps, tolerance)
        faint = flagged & faint_rows(values, eps, float(magnitude[group].max()))
        if not noisy:
            tol = spec.tolerance
            noisy = bool(noise_rows(line, values, eps, faint, tol.atol, tol.rtol).any())
        return bool((flagged & ~faint).any()) if noisy else bool(flagged.any())

    near: list[int] = []
    groups = [torch.arange(argument.numel(), device=argument.device)]
    probes = 0
    while groups and probes < MAX_PROBES:  # kinks everywhere (quantizers): stop looking
        group = groups.pop()
        probes += 1
        if not kinked(group):
            continue
        if len(group) == 1:
            near.append(int(group[0]))
        else:
            half = len(group) // 2
            groups += [group[half:], group[:half]]
    return Near(sorted(near), complete=not groups)


def _tolerance(values: torch.Tensor, spec: FunctionSpec) -> torch.Tensor:
    """Per row, the tolerance of the slope the samples show."""
    eps, tol = spec.tolerance.eps, spec.tolerance
    slope = (values[-1] - values[0]) / (2 * eps * OFFSETS[-1])
    return tol.atol + tol.rtol * torch.nan_to_num(slope.abs(), posinf=0.0)


def _note(target: Target, index: int, redrawn: int, tries: int, still: Near) -> str | None:
    if not redrawn:
        if still.remaining:
            return f"{_describe(target, index)}: {_still(still)}"
        return None
    text = (
        f"re-drew {redrawn} element(s) of {_describe(target, index)} that fell within eps of a "
        f"non-differentiable point ({tries} {'try' if tries == 1 else 'tries'})"
    )
    if still.remaining:
        text += f"; {_still(still)}"
    return text


def _describe(target: Target, index: int) -> str:
    name = target.argument_name(index)
    return f"argument {index} ({name})" if name else f"argument {index}"


def _still(near: Near) -> str:
    count = len(near.columns)
    if near.complete:
        return f"{count} element(s) still within eps of one: mismatches there are judged as kinks"
    return (
        f"group testing stopped after {MAX_PROBES} probes with at least {count} element(s) "
        "within eps of one: mismatches there are judged as kinks"
    )
