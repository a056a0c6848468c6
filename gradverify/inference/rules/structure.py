"""Structured inputs beside the plain ones: where the code asks for a structure (symmetric,
SPD, triangular, orthogonal, a simplex; gradverify.inference.reading.parameters), the base case has
it, and a twin case without it is tried too. A finding on the twin that the structured case
does not show is the Function's contract, reported as a warning (gradverify.engine.contracts),
never as a failure.

Importing this module never imports torch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from gradverify.inference.choice import Choice

# The twin's label names what it drops: `A without symmetric`.
WITHOUT = "without"


def unstructured(base: Sequence[Choice]) -> Iterator[tuple[str, list[Choice]]]:
    """The base case with its structured tensors drawn plain, one case for them all."""
    structured = [c for c in base if c.structure is not None]
    if not structured:
        return
    label = ", ".join(f"{c.name} {WITHOUT} {c.structure}" for c in structured)
    yield label, [replace(c, structure=None) for c in base]


def is_plain_twin(base: Sequence[Choice], choices: Sequence[Choice]) -> bool:
    """Whether `choices` is `base` with its structures dropped: a case for zero-config's
    contract warning, not one for a spec the user keeps (`init` leaves it out)."""
    return any(c.structure for c in base) and list(choices) == [
        replace(c, structure=None) for c in base
    ]
