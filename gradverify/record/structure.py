"""The structure a recorded tensor's values had, kept by the tensor drawn in its place: the
spec's `structure:` whose draws have every property the recorded values had (the fewest
others beside, so that the draws vary as much as the contract lets them), else the recorded
values themselves.

The probe tells the properties (probe.py `_structure`): `positive`, `simplex`, and on square
matrices `symmetric`, `spd`, `lower`, `upper`, `orthogonal`. A draw from a range keeps
`positive` where the recorded values were positive (the range never crosses 0); a
`symmetric` draw ((A + Aᵀ) / 2) stays in its range too."""

from __future__ import annotations

from collections.abc import Collection

# What the draws of each `structure:` always have (gradverify.inputs.structured).
KEEPS: dict[str | None, frozenset[str]] = {
    None: frozenset(),
    "symmetric": frozenset({"symmetric"}),
    "lower": frozenset({"lower"}),
    "upper": frozenset({"upper"}),
    "spd": frozenset({"symmetric", "spd"}),
    "orthogonal": frozenset({"orthogonal"}),
    "simplex": frozenset({"simplex", "positive"}),
}
# The structures drawn from the input's `low`/`high`: what else they draw ignores the range.
RANGED = frozenset({None, "symmetric", "lower", "upper"})
# Where a range with a positive low keeps the draws positive (a triangle adds zeros).
POSITIVE_FROM_RANGE = frozenset({None, "symmetric"})


def kept_by(structure: str | None, low: float | None) -> frozenset[str]:
    """The properties every draw of `structure` from a range starting at `low` has."""
    kept = KEEPS[structure]
    if structure in POSITIVE_FROM_RANGE and low is not None and low > 0:
        kept |= {"positive"}
    return kept


def drawn_structure(properties: Collection[str], low: float | None) -> tuple[bool, str | None]:
    """Whether a draw can keep every one of `properties` (recorded with `low` as the least
    value), and the `structure:` it needs for that (None: a plain draw)."""
    wanted = frozenset(properties)
    fits = [structure for structure in KEEPS if wanted <= kept_by(structure, low)]
    if not fits:
        return False, None
    return True, min(fits, key=lambda structure: len(KEEPS[structure]))
