"""The rules that shape inference's guesses to what a Function's code asks for, in one
ordered registry, as the catalogue holds the checks.

- A **fitter** makes an assignment of inputs fit the code before it is tried: index tensors
  valid for what they index, counts that cover them, compared extents positive, an ordered
  pair (`lo < hi`) in its order. `(target, choices) -> choices`, applied in `FITTERS`' order
  to every guess the search and the extra cases try (gradverify.inference.search.reach).
- A **proposer** yields extra cases that reach other paths of the code: both sides of a
  comparison between inputs, indices that repeat, other sizes, a batch of squares, a
  default as a 0-d tensor. `(target, base, trial) -> Iterator[Extra]`, where `trial` runs
  forward and backward on a guess (the search's probe, passed in: a rule never imports the
  search that runs it).

Adding a rule is a module here and a line in `FITTERS` or `PROPOSERS`. The rules read what
the code says through gradverify.inference.reading and never run the user's code but
through `trial`.

Importing this package never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from gradverify.inference.choice import Choice, fit_indices
from gradverify.inference.extra import Extra
from gradverify.inference.rules import branches, gathers, indices, order, scalars, shapes

if TYPE_CHECKING:
    from gradverify.target.loaded import Target


class Tried(Protocol):
    """What a trial of a guess tells a rule (the probe's outcome)."""

    @property
    def stage(self) -> str: ...  # "done" where forward and backward ran well

    @property
    def none(self) -> tuple[int, ...]: ...  # inputs backward gave no gradient

    @property
    def wrong_shape(self) -> tuple[int, ...]: ...  # inputs whose gradient is misshapen


Trial = Callable[["Target", Sequence[Choice]], Tried]
Fitter = Callable[["Target", Sequence[Choice]], list[Choice]]
Proposer = Callable[["Target", Sequence[Choice], Trial], Iterator[Extra]]


def _components(target: Target, choices: Sequence[Choice]) -> list[Choice]:
    """An axis forward reads with literals (`x[..., 0]`, `x[..., 1]`), as wide as it reads
    it: a wider one holds entries forward never reads, a guess outside its contract."""
    return shapes.with_components(target, choices)


def _index_ranges(target: Target, choices: Sequence[Choice]) -> list[Choice]:
    """Index tensors drawn within the size they index."""
    return fit_indices(choices)


def _other_sizes(target: Target, base: Sequence[Choice], trial: Trial) -> Iterator[Extra]:
    return shapes.other_sizes(base)


def _batched_squares(target: Target, base: Sequence[Choice], trial: Trial) -> Iterator[Extra]:
    return shapes.batched_squares(base)


def _both_sides(target: Target, base: Sequence[Choice], trial: Trial) -> Iterator[Extra]:
    return branches.both_sides(target, base)


def _repeats(target: Target, base: Sequence[Choice], trial: Trial) -> Iterator[Extra]:
    return indices.repeats(target, base)


# In order: each fitter sees what the ones before made of the guess.
FITTERS: tuple[Fitter, ...] = (
    _components,  # shapes: literal-read axes as wide as forward reads them
    _index_ranges,  # choice: index tensors within what they index
    indices.fit,  # indices: as long as what they pair with, repeating
    gathers.fit,  # gathers: valid for the dim they gather from
    branches.positive_extents,  # branches: compared extents drawn positive; counts cover
    order.ordered,  # order: an ordered pair (lo < hi) in its order
)
# In order: the most telling extra cases first (the probe budget may end the list).
PROPOSERS: tuple[Proposer, ...] = (
    _both_sides,  # branches: both sides of each comparison between inputs
    _repeats,  # indices: indices that repeat
    _other_sizes,  # shapes: two inputs of one role at other sizes
    _batched_squares,  # shapes: a batch of square matrices
    scalars.as_tensors,  # scalars: a float default as a 0-d tensor near it
)
