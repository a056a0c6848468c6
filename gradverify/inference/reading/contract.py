"""`Contract`: what the code says of one parameter (its kind, shape, structure, whether it is
differentiated), as every reader of the code builds it (gradverify.inference.reading.parameters
and the quadratic-form and sparse-operand readers beside it). Its own low module, so that the
readers import it and the module that merges them imports the readers, never in a circle.

Importing this module never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Contract:
    """What the code says of one parameter; each part None where it says nothing."""

    kind: str | None = None  # CALLABLE, SHAPE, OUT, MASK
    dims: tuple[str, ...] | None = None  # symbolic shape: ("B", "N", "9")
    rank: int | None = None
    sizes: tuple[tuple[int, int], ...] = ()  # (dim, size) from asserts: ((-1, 9),)
    structure: str | None = None
    reasons: tuple[str, ...] = field(default_factory=tuple)
    constant: bool = False  # said to receive no gradient: requires_grad false
    odd: frozenset[str] = frozenset()  # named dims whose size must be odd (`K odd`)
    loose: bool = False  # only a word gave the shape (`scalar`): a number would do too
    integer: bool = False  # said to hold integers (`int64`, indices): an index tensor

    @property
    def reason(self) -> str:
        return "; ".join(dict.fromkeys(self.reasons))

    def merged(self, other: Contract) -> Contract:
        """This, with what `other` adds where this says nothing."""
        return Contract(
            self.kind or other.kind,
            self.dims or other.dims,
            self.rank or other.rank,
            self.sizes + tuple(s for s in other.sizes if s[0] not in dict(self.sizes)),
            self.structure or other.structure,
            self.reasons + other.reasons,
            self.constant or other.constant,
            self.odd | other.odd,
            self.loose if self.dims is not None else other.loose,
            self.integer or other.integer,
        )
