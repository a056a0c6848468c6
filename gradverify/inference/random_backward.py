"""A backward that draws random numbers of its own: a stochastic estimator, checked as one.

Some backwards are Monte-Carlo estimators by design (random gradient sparsification: keep
each entry with probability p and divide by p). Two runs on the same inputs and grad_outputs
differ, so the `backward` check would call it nondeterministic and the gradient checks would
compare one draw with the derivative. Inference tells such a backward apart from a race or
atomics by the global RNG: under other seeds two runs differ, under the same seed they agree.
It then infers `gradient: approximate` with `samples` from the measured run-to-run spread
(as gradverify.numerics.stochastic.samples_hint counts them) and a `max_error` that a
biased estimator (a mask not rescaled by 1/p) stays above however many runs are averaged.

Importing this module never imports torch; `random_backward` does.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gradverify.inference.choice import CASE

if TYPE_CHECKING:
    import torch

    from gradverify.inference.choice import Choice
    from gradverify.target.loaded import Target

SEEDS = (11, 12)  # backward under the first twice, then under the second
SPREAD_RUNS = 32  # backward Jacobians whose per-entry standard deviation is the spread
# The error allowed relative to the gradient's largest value: a bias of 20% (a rescaling
# forgotten, a factor off) stays above it; the mean's noise is brought well below it.
MAX_ERROR = 0.1
# The mean's standard deviation per entry is at most max_error / SIGMAS: over the few hundred
# entries of an inferred case, a correct estimator's largest deviation stays below max_error.
SIGMAS = 5.0
MAX_SAMPLES = 1024
BUDGET_SECONDS = 4.0  # for the `samples` Jacobians of the slowest case, per check


@dataclass(frozen=True)
class RandomBackward:
    """What inference measured of a backward that draws its own random numbers."""

    samples: int  # the spec's `samples`: backward runs whose mean is compared
    max_error: float  # the spec's `max_error`, relative to the gradient's largest value
    deviation: float  # one run's largest standard deviation per entry, relative

    def spec_keys(self) -> dict[str, Any]:
        return {"gradient": "approximate", "samples": self.samples, "max_error": self.max_error}

    def note(self) -> str:
        """The zero-config note's sentence."""
        return (
            "backward draws random numbers: checked as a stochastic estimator, `gradient: "
            f"approximate`, the mean of {self.samples} backward runs against the derivative "
            f"(samples: {self.samples}, max_error: {self.max_error:g}; two runs differ under "
            "other seeds and agree under the same one; one run's entries deviate by up to "
            f"{self.deviation:.0%} of the largest)"
        )

    def spec_lines(self) -> list[str]:
        """The spec's keys as YAML lines, commented (init's and record's new specs)."""
        return [
            f"gradient: approximate   # {self.comment()}",
            f"samples: {self.samples}",
            f"max_error: {self.max_error:g}",
        ]

    def comment(self) -> str:
        """`init`'s comment beside `gradient: approximate`."""
        return (
            "backward draws random numbers: a stochastic estimator, judged by the mean of "
            f"`samples` runs (one run's entries deviate by up to {self.deviation:.0%} of the "
            "largest)"
        )


def random_backward(target: Target, cases: Sequence[Sequence[Choice]]) -> RandomBackward | None:
    """A RandomBackward where backward, on the first of `cases`, gives other gradients under
    other seeds of the global RNG and the same under the same seed; else None. The spread is
    measured on every case (the spec's `samples` holds for all). The user's RNG is left as
    it was; an error in the user's code here is no claim."""
    return random_backward_on(target, [[c.item for c in choices] for choices in cases])


def random_backward_on(target: Target, cases: Sequence[Sequence[Any]]) -> RandomBackward | None:
    """`random_backward` on cases given as a spec's inputs (a recorded case's, too)."""
    import torch

    try:
        with torch.random.fork_rng(devices=_devices()):
            if not _draws(target, cases[0]):
                return None
            measured = [_spread(target, inputs) for inputs in cases]
    except Exception:
        return None
    found = [m for m in measured if m is not None]
    if not found:
        return None
    deviation = max(relative for relative, _ in found)
    seconds = max(each for _, each in found)
    return _keys(deviation, seconds)


def _devices() -> list[int]:
    """The CUDA devices whose generators torch.manual_seed reseeds, once CUDA is in use:
    theirs are restored too."""
    import torch

    return list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []


def _keys(deviation: float, seconds: float) -> RandomBackward:
    """`samples` that bring the mean's noise to max_error / SIGMAS, within the budget; where
    the budget allows fewer, a max_error that many samples meet."""
    needed = max(2, math.ceil((SIGMAS * deviation / MAX_ERROR) ** 2))
    affordable = max(2, int(BUDGET_SECONDS / seconds)) if seconds > 0 else MAX_SAMPLES
    samples = min(needed, affordable, MAX_SAMPLES)
    max_error = MAX_ERROR
    if samples < needed:
        max_error = _round_up(SIGMAS * deviation / math.sqrt(samples))
    return RandomBackward(samples, max_error, deviation)


def _round_up(value: float) -> float:
    """`value` rounded up to two significant digits (a readable max_error)."""
    digits = 1 - math.floor(math.log10(value))
    return math.ceil(value * 10**digits) / 10**digits


def _draws(target: Target, inputs: Sequence[Any]) -> bool:
    """Whether backward's gradients, for one forward, differ under other seeds and agree
    under the same one (not a race, not atomics)."""
    import torch

    from gradverify.numerics import seeded

    arguments, outputs, wrt = _forward(target, inputs)
    if not outputs or not wrt:
        return False
    generator = seeded.generator(0)
    grad_outputs = [seeded.normal(o.shape, generator, o.device, o.dtype) for o in outputs]
    runs = []
    for seed in (SEEDS[0], SEEDS[0], SEEDS[1]):
        torch.manual_seed(seed)
        grads = torch.autograd.grad(
            outputs, [arguments[i] for i in wrt], grad_outputs, retain_graph=True,
            allow_unused=True,
        )  # fmt: skip
        runs.append(grads)
    from gradverify.numerics.spreads import spreads

    terms = sum(o.numel() for o in outputs)
    same = all(spread.rounding for spread in spreads(runs[0], runs[1], terms))
    other = not all(spread.rounding for spread in spreads(runs[0], runs[2], terms))
    return same and other


def _spread(target: Target, inputs: Sequence[Any]) -> tuple[float, float] | None:
    """On `inputs`: one run's largest standard deviation per Jacobian entry, relative to the
    mean Jacobian's largest entry, over every argument; and the seconds of one Jacobian."""
    import torch

    from gradverify.numerics.stochastic import mean_jacobians

    arguments, outputs, wrt = _forward(target, inputs)
    if not outputs or not wrt:
        return None
    torch.manual_seed(SEEDS[1])
    started = time.perf_counter()
    mean, deviation = mean_jacobians(outputs, arguments, wrt, SPREAD_RUNS)
    seconds = (time.perf_counter() - started) / SPREAD_RUNS
    relative = 0.0
    for index in wrt:
        largest = float(mean[index].abs().max()) if mean[index].numel() else 0.0
        spread = deviation.get(index, 0.0)
        if spread > 0:
            relative = max(relative, spread / largest if largest > 0 else 1.0)
    return relative, seconds


def _forward(
    target: Target, inputs: Sequence[Any]
) -> tuple[list[Any], list[torch.Tensor], list[int]]:
    """The spec's `inputs` built, forward's differentiable outputs on them (one seeded run),
    and the float tensor arguments that require grad."""
    import torch

    from gradverify.inference.search.precision import cast
    from gradverify.inputs import build_inputs
    from gradverify.numerics.jacobian import differentiable_outputs
    from gradverify.spec.models import Case

    case = Case.model_validate({"name": CASE, "inputs": list(inputs)})
    arguments = list(cast(build_inputs(case, 0)))
    torch.manual_seed(0)
    returned = target.call(*arguments)
    items = returned if isinstance(returned, tuple | list) else (returned,)
    outputs = [output for _, output in differentiable_outputs(items)]
    wrt = [
        index
        for index, argument in enumerate(arguments)
        if isinstance(argument, torch.Tensor)
        and argument.requires_grad
        and (argument.is_floating_point() or argument.is_complex())
    ]
    return arguments, outputs, wrt
