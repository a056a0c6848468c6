"""What inference adds to reach the branches (issue 23), in the two places it hooks in:
`fitted`, applied to every assignment the base search and the extra cases probe (index
tensors that fit and repeat, counts that cover them, extents drawn positive), and
`reaching`, the extra cases its rules propose (gradverify.inference.branches, indices,
shapes, scalars).

Importing this module never imports torch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from gradverify.inference import branches, gathers, indices, order, scalars, shapes
from gradverify.inference.choice import Choice, fit_indices
from gradverify.inference.extra import Extra

if TYPE_CHECKING:
    from gradverify.target.loaded import Target


def fitted(target: Target, choices: Sequence[Choice]) -> list[Choice]:
    """`choices` with index tensors valid for what they index, as long as what they pair
    with or gather from and repeating; counts covering them; compared extents positive; an axis forward
    reads with literals as wide as the base case got it; an ordered pair (`lo < hi`,
    gradverify.inference.order) in its order."""
    read = shapes.with_components(target, choices, kept_only=True)
    fit = gathers.fit(target, indices.fit(target, fit_indices(read)))
    return order.ordered(target, branches.positive_extents(target, fit))


def relabeled(label: str, before: Sequence[Choice], after: Sequence[Choice]) -> str:
    """A case's label with the shapes `fitted` changed (`points [3, 5]` -> `points [3, 2]`)."""
    for old, new in zip(before, after, strict=True):
        if old.shape != new.shape:
            label = label.replace(f"{old.name} {list(old.shape)}", f"{new.name} {list(new.shape)}")
    return label


def reaching(target: Target, base: Sequence[Choice]) -> Iterator[Extra]:
    """The extra cases: both sides of each comparison between inputs, indices that repeat,
    two inputs of one role at other sizes, a batch of squares, defaults as 0-d tensors."""
    yield from branches.both_sides(target, base)
    yield from indices.repeats(target, base)
    yield from shapes.other_sizes(base)
    yield from shapes.batched_squares(base)
    yield from scalars.as_tensors(target, base)
