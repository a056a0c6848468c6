"""Two backward runs on the same inputs: identical, apart by rounding (atomics), or apart,
in the `backward` check's words (gradverify.numerics.spreads measures the spread).

Atomic adds on a GPU (`index_add_`, `scatter_add_`, `index_put_(accumulate=True)`) sum in
whatever order the threads arrive, so two runs of a correct backward differ in the last bits.
That is no bug: such a spread is measured, said in the pass line, and the later checks allow
it as `tolerance.nondet_tol` would. A spread beyond rounding (random numbers in backward, a
race that loses one of the writes to a repeated index) still fails.
"""

from __future__ import annotations

from collections.abc import Sequence

from gradverify.numerics.spreads import Spread


def rounding_words(found: Sequence[Spread]) -> str:
    """The pass line's words for a spread at rounding level."""
    worst = max(spread.worst for spread in found)
    allowed = max(spread.allowance for spread in found)
    return (
        f"two runs differ by up to {worst:.3g}, at rounding level (atomic adds sum in another "
        f"order each run); the later checks allow up to {allowed:.2g}, as "
        f"`tolerance: {{nondet_tol: {allowed:.2g}}}` would"
    )
