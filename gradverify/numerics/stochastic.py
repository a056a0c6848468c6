"""`gradient: approximate` with a stochastic estimator: backward differs run to run.

Two backward runs on the same inputs differ by design (a Monte-Carlo gradient), so the
`backward` check reports their spread as a figure instead of failing, and
`finite_difference` compares the mean of `samples` backward runs with central differences:
the mean's noise shrinks as 1/√samples, while a biased estimator stays off however many runs
are averaged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from gradverify.numerics.jacobian import analytical_jacobians


def run_to_run_spread(first: Sequence[Any], again: Sequence[Any]) -> float:
    """The largest difference between two backward runs' gradients, over every argument."""
    spread = 0.0
    for one, two in zip(first, again, strict=False):
        comparable = isinstance(one, torch.Tensor) and isinstance(two, torch.Tensor)
        if comparable and one.shape == two.shape and one.numel():
            difference = (one.detach() - two.detach()).abs().to(torch.float64)
            spread = max(spread, float(difference.max()))
    return spread


def mean_jacobians(
    outputs: Sequence[torch.Tensor],
    arguments: Sequence[Any],
    wrt: Sequence[int],
    samples: int,
    measure_spread: bool = False,
) -> tuple[dict[int, torch.Tensor], dict[int, float]]:
    """The mean of `samples` analytical Jacobians, and per argument the largest standard
    deviation of one run's entry. With `measure_spread` and one sample, a second run is made
    only to measure the deviation (it does not enter the mean)."""
    runs = [analytical_jacobians(outputs, arguments, wrt) for _ in range(samples)]
    extra = []
    if measure_spread and samples == 1:
        extra = [analytical_jacobians(outputs, arguments, wrt)]
    mean = {index: torch.stack([run[index] for run in runs]).mean(dim=0) for index in wrt}
    if len(runs) + len(extra) < 2:
        return mean, {}
    deviation = {}
    for index in wrt:
        stacked = torch.stack([run[index] for run in (*runs, *extra)]).to(torch.float64)
        deviation[index] = float(stacked.std(dim=0).max()) if stacked[0].numel() else 0.0
    return mean, deviation


def mean_note(samples: int, deviation: float | None) -> tuple[str, ...]:
    """What `finite_difference` compared, in approximate mode with several samples."""
    if samples < 2:
        return ()
    spread = ""
    if deviation:
        spread = (
            f"; one run's entries deviate by up to {deviation:.3g} (standard deviation), "
            f"the mean's by about {deviation / math.sqrt(samples):.3g}"
        )
    return (f"analytical: the mean of {samples} backward runs (samples: {samples}){spread}",)


def samples_hint(samples: int, deviation: float | None, allowed: float) -> str | None:
    """With one sample of a backward that varies run to run, above max_error: how many
    samples bring the mean's noise to a third of the allowed error (`allowed`, absolute)."""
    if samples > 1 or not deviation or allowed <= 0:
        return None
    needed = max(2, math.ceil((3 * deviation / allowed) ** 2))
    return (
        f"backward varies run to run (a standard deviation of up to {deviation:.3g} per entry "
        f"here): compare the mean of several runs, e.g. `samples: {needed}`, which brings the "
        "mean's noise to about a third of max_error"
    )
