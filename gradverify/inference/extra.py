"""One more case a rule proposes (gradverify.inference.rules.branches, indices, shapes, scalars),
before gradverify.inference.cases probes it as a `Candidate`.

Importing this module never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradverify.inference.choice import Choice


@dataclass(frozen=True)
class Extra:
    """One more case to probe: its label, its inputs, and the arguments whose misfitting
    gradient is a finding (a backward that must reduce or reshape for them)."""

    label: str
    choices: list[Choice]
    lenient: tuple[int, ...] = ()
