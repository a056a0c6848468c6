"""Explore: search a case's declared domain for an input that fails, and shrink it.

On by default, within a time budget: up to DEFAULT_DRAWS further draws, for at most
DEFAULT_SHARE of the time the case has taken so far (its inputs and the checks before and
including finite_difference), so that a run costs at most about that much more; the first
draw is made whatever its time (one more finite_difference: a verdict that repeats run to
run on any machine for what that draw finds, the spec's numbers varied included). An
`explore: N` key or `--explore N` asks for N draws within half the case's timeout;
`explore: 0` / `--explore 0` turns it off.

The search (gradverify.engine.explore.search) is imported only by a case that explores: its
imports (the shrinker, the YAML writer) stay off the fork server's start-up.
"""

from __future__ import annotations

from dataclasses import dataclass

# The check that explored draws are judged by.
CHECK = "finite_difference"
# The default: this many further draws at most, within this share of the case's time so far
# (bench/explore.py: `gradverify check specs/` within 1.3x of its time without exploring).
DEFAULT_DRAWS = 20
DEFAULT_SHARE = 0.5
FIRST_DRAWS = 1  # made by default whatever the time (within half the case's timeout)


@dataclass(frozen=True)
class Budget:
    """How far one case's exploration may go."""

    draws: int  # further draws at most
    seconds: float  # time for the draws
    shrink_seconds: float  # time for shrinking a failure found (worth more than a search)
    by_default: bool  # the default budget: no `explore:` key nor `--explore N`
    first_draws: int = 0  # draws made even when the time says no (not past `seconds` = 0)


def budget(explore: int | None, timeout: float, spent: float) -> Budget | None:
    """The budget of a case that has taken `spent` seconds so far; None: not exploring."""
    if explore == 0:
        return None
    spare = max(0.0, timeout / 2 - spent)  # never the case's own timeout
    if explore is None:
        seconds = min(DEFAULT_SHARE * spent, spare)
        return Budget(DEFAULT_DRAWS, seconds, spare, by_default=True, first_draws=FIRST_DRAWS)
    return Budget(explore, spare, spare, by_default=False)


__all__ = ["CHECK", "DEFAULT_DRAWS", "DEFAULT_SHARE", "Budget", "budget"]
