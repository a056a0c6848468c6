"""Where the rules (gradverify.inference.rules) hook into the search, in two places:
`fitted`, every fitter applied to every assignment the base search and the extra cases
probe (index tensors that fit and repeat, counts that cover them, extents drawn positive),
and `reaching`, the extra cases every proposer yields, tried with the probe.

Importing this module never imports torch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from gradverify.inference.choice import Choice
from gradverify.inference.extra import Extra
from gradverify.inference.rules import FITTERS, PROPOSERS
from gradverify.inference.search.probe import probe

if TYPE_CHECKING:
    from gradverify.target.loaded import Target


def fitted(target: Target, choices: Sequence[Choice]) -> list[Choice]:
    """`choices` made to fit what the code asks for, by each fitter of the rules' registry
    in its order (gradverify.inference.rules.FITTERS)."""
    fit = list(choices)
    for fitter in FITTERS:
        fit = fitter(target, fit)
    return fit


def relabeled(label: str, before: Sequence[Choice], after: Sequence[Choice]) -> str:
    """A case's label with the shapes `fitted` changed (`points [3, 5]` -> `points [3, 2]`)."""
    for old, new in zip(before, after, strict=True):
        if old.shape != new.shape:
            label = label.replace(f"{old.name} {list(old.shape)}", f"{new.name} {list(new.shape)}")
    return label


def reaching(target: Target, base: Sequence[Choice]) -> Iterator[Extra]:
    """The extra cases the rules propose (gradverify.inference.rules.PROPOSERS), each rule
    trying its guesses with the probe."""
    for proposer in PROPOSERS:
        yield from proposer(target, base, probe)
