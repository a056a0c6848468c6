"""Complex arguments and outputs as pairs of real numbers, the way torch's gradcheck sees them.

torch's convention (torch.autograd.gradcheck, "complex autograd" in its docs): for a real
value s of a complex argument z = x + iy, backward returns ∂s/∂x + i·∂s/∂y, the conjugate
Wirtinger derivative (times 2). gradcheck checks it through the parts: numerically it perturbs
x and y on their own, analytically it reads the real and imaginary parts of backward's
gradient; a complex output is checked as two real ones, its real part (grad_output 1) and its
imaginary part (grad_output 1j).

So the checks see the case as a real function. Each complex argument that requires grad is
handed in as `torch.view_as_real` (a real tensor [..., 2]: real part, imaginary part) and
turned back with `view_as_complex` before forward; each complex output comes back as
`view_as_real`. Autograd through those views does exactly what torch does: a grad_output
[1, 0] on an output's pair reaches backward as 1, [0, 1] as 1j, and backward's complex
gradient reaches the pair of z as [real part, imaginary part]. The real Jacobian then holds
the very entries torch compares, and central differences, kinks, rounding noise, diagnosis
and randomized mode work on it unchanged. `Parts` names an entry back: the element of z, and
which part of which is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from gradverify.numerics.jacobian import OutputLayout, unravel
from gradverify.numerics.patterns import EXPLAINED, MIN_ENTRIES

PART_NAMES = ("real", "imaginary")
GRAD_OUTPUTS = ("1", "1j")  # the grad_output each part of a complex output stands for


@dataclass(frozen=True)
class Parts:
    """Which values and which rows of a realified problem are (real, imaginary) pairs.

    `columns`: positions among the values (arguments, then grad_outputs for second order)
    handed in as pairs. `rows`: layout indices (outputs, or for second order the arguments
    whose gradients are the rows) that come out as pairs; first-order calls fill it in.
    """

    columns: frozenset[int] = frozenset()
    rows: set[int] = field(default_factory=set)

    @property
    def any(self) -> bool:
        return bool(self.columns or self.rows)

    def element(self, position: int, column: int, shape: Sequence[int]) -> tuple[int, ...]:
        """The element of values[position] (its own shape, without the pair) of a flat column;
        `shape` is the shape the problem sees."""
        index = unravel(column, shape)
        return index[:-1] if position in self.columns else index

    def flat_element(self, position: int, column: int) -> int:
        """The flat index, in the user's shape, of the element a column belongs to."""
        return column // 2 if position in self.columns else column

    def column_part(self, position: int, column: int) -> str | None:
        """`real` or `imaginary` for a column of a pair, None for a real value."""
        return PART_NAMES[column % 2] if position in self.columns else None

    def locate(self, layout: OutputLayout, row: int) -> tuple[int, tuple[int, ...], str | None]:
        """(output index, element, part) of a Jacobian row; part None for a real output."""
        output, element = layout.locate(row)
        if output in self.rows:
            return output, element[:-1], PART_NAMES[element[-1]]
        return output, element, None

    def shape(self, position: int, shape: Sequence[int]) -> tuple[int, ...]:
        """The user's shape of a value the problem sees in `shape`."""
        return tuple(shape[:-1]) if position in self.columns else tuple(shape)

    def row_count(self, layout: OutputLayout) -> int:
        """The output elements, counting a complex one once."""
        return sum(
            math.prod(shape[:-1] if index in self.rows else shape)
            for index, shape in zip(layout.indices, layout.shapes, strict=True)
        )

    def element_mask(self, off: torch.Tensor, position: int) -> torch.Tensor:
        """A block's mask [rows, columns] folded to [rows, elements]: an element is off
        where either of its parts is."""
        if position not in self.columns:
            return off
        return off.reshape(off.shape[0], -1, 2).any(dim=-1)

    def magnitudes(self, numerical: torch.Tensor, position: int) -> torch.Tensor:
        """|numerical entry| as torch's gradcheck takes it: the complex entry's modulus on
        both parts of a pair, so that rtol scales with the gradient, not with one part."""
        if position not in self.columns or numerical.numel() == 0:
            return numerical.abs()
        pairs = numerical.to(torch.float64).reshape(numerical.shape[0], -1, 2)
        modulus = torch.linalg.vector_norm(pairs, dim=-1, keepdim=True)
        return modulus.expand_as(pairs).reshape(numerical.shape)

    def user_masks(
        self, masks: dict[int, torch.Tensor], arguments: Sequence[Any]
    ) -> dict[int, torch.Tensor]:
        """Masks over what the problem sees, as masks over the user's arguments: a complex
        element is held when either of its parts is."""
        return {
            index: mask.any(dim=-1) if index in self.columns else mask
            for index, mask in masks.items()
            if index < len(arguments)
        }

    def entry_words(self, name: str, position: int, column: int, row_part: str | None) -> str:
        """Which part of which is wrong, in plain words ("" when nothing is complex).

        A complex output's part says which grad_output the gradient answers: 1 for its real
        part, 1j for its imaginary part.
        """
        column_part = self.column_part(position, column)
        if column_part is None and row_part is None:
            return ""
        of = f"of the {row_part} part of the output " if row_part else ""
        answers = f"grad_output {GRAD_OUTPUTS[PART_NAMES.index(row_part)]}" if row_part else ""
        if column_part is None:
            return f"the derivative {of}({answers})"
        words = f"the {column_part} part of the gradient" + (f" for {answers}" if answers else "")
        return f"{words} (the derivative {of}with respect to the {column_part} part of {name})"


NO_PARTS = Parts()


def as_pairs(value: torch.Tensor) -> torch.Tensor:
    """A complex tensor as a real leaf [..., 2] (real part, imaginary part), same requires_grad."""
    pairs = torch.view_as_real(value.detach().resolve_conj()).clone()
    return pairs.requires_grad_(value.requires_grad)


def real_call(
    call: Callable[..., Any], columns: frozenset[int], complex_outputs: set[int]
) -> Callable[..., Any]:
    """`call` on pairs: the `columns` arguments turned back into complex numbers, complex
    outputs returned as pairs (their positions recorded in `complex_outputs`)."""

    def wrapped(*values: Any) -> Any:
        arguments = [
            torch.view_as_complex(_contiguous_pairs(value)) if index in columns else value
            for index, value in enumerate(values)
        ]
        produced = call(*arguments)
        single = not isinstance(produced, tuple)
        outputs = (produced,) if single else produced
        realified = []
        for index, output in enumerate(outputs):
            if isinstance(output, torch.Tensor) and output.is_complex():
                complex_outputs.add(index)
                output = torch.view_as_real(output.resolve_conj())
            realified.append(output)
        return realified[0] if single else tuple(realified)

    return wrapped


def _contiguous_pairs(value: torch.Tensor) -> torch.Tensor:
    # view_as_complex needs the pair dimension innermost and unit-strided.
    return value if value.stride(-1) == 1 and value.is_contiguous() else value.contiguous()


def pairs_of(tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """grad_outputs (or any tensors) with the complex ones as real leaf pairs."""
    return [as_pairs(t) if t.is_complex() else t for t in tensors]


def second_order_parts(
    first: Parts, n_arguments: int, grad_outputs: Sequence[torch.Tensor]
) -> Parts:
    """The pairs of a second-order problem (values: arguments, then grad_outputs; rows: the
    gradients of the arguments): the complex arguments and the complex grad_outputs among
    the values, and the gradients of complex arguments among the rows."""
    from_outputs = {n_arguments + k for k, g in enumerate(grad_outputs) if g.is_complex()}
    return Parts(first.columns | from_outputs, set(first.columns))


# A conjugation hint only on this much evidence (as `diagnosis.py` asks of its patterns).
SIGNIFICANT = 10.0  # entries larger than this many atol show a sign


def cross_mask(
    parts: Parts, layout: OutputLayout, position: int, columns: int, device: torch.device
) -> torch.Tensor:
    """[rows, columns] bool on `device`: entries across parts, the derivative of a real part
    with respect to an imaginary part or the other way round (a real value counts as a real
    part)."""

    def part_of(size: int, complex_parts: bool) -> torch.Tensor:
        each = torch.arange(size, device=device) % 2
        return each if complex_parts else torch.zeros_like(each)

    row_parts = torch.cat([
        part_of(math.prod(shape), index in parts.rows)
        for index, shape in zip(layout.indices, layout.shapes, strict=True)
    ])  # fmt: skip
    column_parts = part_of(columns, position in parts.columns)
    return row_parts[:, None] != column_parts[None, :]


@dataclass(frozen=True)
class PartsMismatch:
    """One argument's Jacobian blocks, as pairs of parts, where backward and finite
    differences disagree: what the complex hints read."""

    parts: Parts
    layout: OutputLayout
    position: int  # the argument's position
    analytical: torch.Tensor
    numerical: torch.Tensor
    off: torch.Tensor  # bool: the entries out of tolerance
    name: str  # the argument as a finding names it
    atol: float
    rtol: float


def conjugation_hint(mismatch: PartsMismatch) -> str | None:
    """The hint for a missing (or extra) conjugate, when the errors show it plainly.

    Backward that forgets a conjugate returns, for a grad_output v, conj(the right gradient
    for conj(v)): the derivatives across parts change sign and the others stay right. Named
    only when every entry obeys that, some entries across parts are large enough to show
    their sign and all of them are off, and some entries within parts are large and right (a
    sign flipped everywhere is the `opposite sign` hint instead).
    """
    parts, position, off, name = mismatch.parts, mismatch.position, mismatch.off, mismatch.name
    analytical, numerical = mismatch.analytical, mismatch.numerical
    atol, rtol = mismatch.atol, mismatch.rtol
    if not parts.any or not bool(off.any()):
        return None
    cross = cross_mask(parts, mismatch.layout, position, analytical.shape[1], analytical.device)
    analytical, numerical = analytical.to(torch.float64), numerical.to(torch.float64)
    significant = numerical.abs() > SIGNIFICANT * atol
    crossing, within = significant & cross, significant & ~cross
    if not bool(crossing.any()) or not bool(within.any()):
        return None
    if int(significant.sum()) < MIN_ENTRIES or not bool(off[crossing].all()):
        return None
    expected = torch.where(cross, -numerical, numerical)
    tolerance = atol + rtol * numerical.abs()
    if not bool(((analytical - expected).abs() <= EXPLAINED * tolerance).all()):
        return None
    if position not in parts.columns:
        evidence = (
            "the derivatives of the imaginary part of the output (grad_output 1j) have the "
            "opposite sign, those of its real part are right"
        )
    elif not parts.rows:
        evidence = (
            f"the imaginary part of the gradient of {name} has the opposite sign, its real "
            "part is right"
        )
    else:
        evidence = (
            "the derivatives across parts, ∂Re/∂Im and ∂Im/∂Re, have the opposite sign; "
            "∂Re/∂Re and ∂Im/∂Im are right"
        )
    return (
        "conjugate missing (or one too many) in backward: torch's gradient is the conjugate "
        "Wirtinger derivative, so for a holomorphic f backward should return "
        f"grad * f'(z).conj(), e.g. grad * w.conj() for z * w ({evidence})"
    )


def complex_hint(mismatch: PartsMismatch) -> str | None:
    """A hint only complex values have: a conjugation bug, or a gradient without its
    imaginary part (None: neither shows plainly)."""
    return conjugation_hint(mismatch) or _real_gradient_hint(mismatch)


def _real_gradient_hint(mismatch: PartsMismatch) -> str | None:
    """Every entry off is a derivative with respect to the imaginary part of a complex
    argument, where backward gives 0: backward returned a real gradient."""
    off, name, atol = mismatch.off, mismatch.name, mismatch.atol
    analytical, numerical = mismatch.analytical, mismatch.numerical
    if mismatch.position not in mismatch.parts.columns or not bool(off.any()):
        return None
    imaginary = (torch.arange(off.shape[1], device=off.device) % 2 == 1)[None, :].expand_as(off)
    wrong = off & (numerical.abs() > SIGNIFICANT * atol)
    if int(wrong.sum()) < MIN_ENTRIES or bool((off & ~imaginary).any()):
        return None
    if not bool((analytical.to(torch.float64)[imaginary].abs() <= atol).all()):
        return None
    return (
        f"the gradient of {name} has no imaginary part (0 wherever the derivative with respect "
        f"to the imaginary part of {name} is not): likely backward returns a real gradient "
        "for a complex argument (`.real`, `.abs()`, a real dtype) where ∂L/∂x + i·∂L/∂y belongs"
    )
