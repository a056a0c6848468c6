"""A random forward's backward judged in expectation.

The gradient checks run forward with the same random numbers in every call (common random
numbers), so finite differences measure the pathwise derivative of one sample. A backward
may instead return another unbiased estimator of the derivative of forward's expectation
(an optimal-transport or control-variate estimator): wrong for the sample, right on
average. Over DRAWS forward seeds, the mean of backward's ∇L·v is compared with the mean of
the pathwise directional derivatives of L along the same directions v (central differences
under each draw's seed), for fixed losses L of the outputs: linear ones ⟨w, y⟩ (the
Jacobian of the outputs' mean) and quadratic ones ½⟨w, y²⟩ (which an estimator unbiased
for any loss passes too; one unbiased for the mean only does not). They agree within
STANDARD_ERRORS standard errors of the mean difference, plus the tolerance an exact
comparison allows. A biased backward stays off however many draws are averaged.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from gradverify.inputs import fresh_copies
from gradverify.numerics import seeded
from gradverify.numerics.jacobian import differentiable_outputs
from gradverify.usercode import user_code

DRAWS = 256  # forward seeds averaged over
DIRECTIONS = 4  # random unit directions v per argument (each element of a smaller one)
WEIGHTS = 4  # linear losses ⟨w, y⟩ of the outputs, the same in every draw
QUADRATIC = 2  # quadratic losses ½⟨w, y²⟩, the same in every draw
STANDARD_ERRORS = 5.0  # how far the means may differ, in standard errors of the difference
TIMED = 4  # draws timed to foresee the others' time
SEEDS = (1, 2)  # forward under each: other outputs mean forward draws random numbers


class OverBudget(Exception):
    """The draws would take longer than allowed (foreseen from the first TIMED)."""

    def __init__(self, seconds_per_draw: float) -> None:
        self.seconds_per_draw = seconds_per_draw
        super().__init__(f"one draw takes {seconds_per_draw:.3g} s")


@dataclass(frozen=True)
class Expectation:
    """Means over `draws` forward seeds at the projection furthest from agreeing."""

    draws: int
    projections: int  # (w, v) pairs compared
    analytical: float  # mean of backward's projection
    numerical: float  # mean pathwise directional derivative
    standard_error: float  # of the mean difference
    allowed: float  # the largest |mean difference| that agrees

    @property
    def difference(self) -> float:
        return self.analytical - self.numerical

    @property
    def agrees(self) -> bool:
        return abs(self.difference) <= self.allowed

    def describe(self) -> str:
        """The measured numbers, in words."""
        errors = abs(self.difference) / self.standard_error if self.standard_error else math.inf
        return (
            f"over {self.draws} draws, at the worst of {self.projections} projections wᵀJv, "
            f"backward's mean is {self.analytical:.6g} and the mean derivative of "
            f"the samples {self.numerical:.6g}: difference {self.difference:.3g}, "
            f"{errors:.3g} standard errors ({self.standard_error:.3g}; allowed {self.allowed:.3g})"
        )


def varies_with_seed(call: Callable[..., Any], arguments: Sequence[Any]) -> bool:
    """Whether forward gives other outputs under other seeds of the global RNG."""
    runs = []
    with _rng_kept(arguments):
        for seed in SEEDS:
            outputs = _sampled(call, fresh_copies(arguments), seed, grad=False)
            runs.append([o.detach() for o in outputs if isinstance(o, torch.Tensor)])
    first, other = runs
    return len(first) != len(other) or any(
        a.shape != b.shape or not torch.equal(a, b) for a, b in zip(first, other, strict=True)
    )


@dataclass(frozen=True)
class Averages:
    """The verdict for linear losses of the outputs (the Jacobian of their mean) and the
    same for quadratic ones, which an estimator unbiased for any loss passes too."""

    linear: Expectation
    quadratic: Expectation


def expectation(
    call: Callable[..., Any],
    arguments: Sequence[Any],
    index: int,
    generator: torch.Generator,
    step: float,
    tolerance: tuple[float, float],
    budget_seconds: float,
) -> Averages:
    """backward's projections against the pathwise derivative's, averaged over DRAWS
    forward seeds; `generator` draws them, the directions and the weights; `tolerance` is
    (atol, rtol). OverBudget where the first draws say all would take longer than
    `budget_seconds`."""
    with _rng_kept(arguments), _one_thread():
        analytical, numerical = projections(call, arguments, index, generator, step, budget_seconds)
    linear = analytical.shape[1] * WEIGHTS // (WEIGHTS + QUADRATIC)  # the first columns
    return Averages(
        judged(analytical[:, :linear], numerical[:, :linear], *tolerance),
        judged(analytical[:, linear:], numerical[:, linear:], *tolerance),
    )


def judged(
    analytical: torch.Tensor, numerical: torch.Tensor, atol: float, rtol: float
) -> Expectation:
    """The verdict on [draws, pairs] projections: per pair, the mean difference
    against STANDARD_ERRORS of its standard errors plus atol + rtol * |mean numerical|."""
    draws, pairs = analytical.shape
    difference = analytical - numerical
    error = (
        difference.std(dim=0) / math.sqrt(draws) if draws > 1 else torch.zeros_like(difference[0])
    )
    mean_numerical = numerical.mean(dim=0)
    allowed = STANDARD_ERRORS * error + atol + rtol * mean_numerical.abs()
    worst = int(torch.argmax(difference.mean(dim=0).abs() / allowed.clamp_min(1e-300)))
    return Expectation(
        draws=draws,
        projections=pairs,
        analytical=float(analytical[:, worst].mean()),
        numerical=float(mean_numerical[worst]),
        standard_error=float(error[worst]),
        allowed=float(allowed[worst]),
    )


def projections(
    call: Callable[..., Any],
    arguments: Sequence[Any],
    index: int,
    generator: torch.Generator,
    step: float,
    budget_seconds: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """[draws, pairs]: for each loss L of the outputs (WEIGHTS linear ones, then QUADRATIC
    ones, the same in every draw) and direction v, backward's ∇L·v and the pathwise central
    difference of L along v; one row per forward seed; float64, on the argument's device."""
    leaves = list(fresh_copies(arguments, torch.float64))
    point = leaves[index]
    seeds = torch.randint(0, 2**62, (DRAWS,), generator=generator, device="cpu").tolist()
    directions = _directions(point, generator)
    losses: list[_Loss] = []
    rows: list[tuple[torch.Tensor, torch.Tensor]] = []
    started = time.perf_counter()
    for draw, seed in enumerate(seeds):
        outputs = differentiable_outputs(_sampled(call, leaves, seed, grad=True))
        if not losses:
            if not outputs or any(o.is_complex() for _, o in outputs):
                raise ValueError("no real outputs to average")  # complex ones: not judged so
            losses = _losses([o for _, o in outputs], generator)
        if [tuple(o.shape) for _, o in outputs] != [tuple(w.shape) for w in losses[0].weights]:
            raise ValueError("forward's outputs change shape from draw to draw")
        gradients = _gradients([loss([o for _, o in outputs]) for loss in losses], point)
        selected = tuple(i for i, _ in outputs)
        moved = [_moved(call, leaves, index, seed, selected, v, step) for v in directions]
        along = [(gradient * v).sum() for gradient in gradients for v in directions]
        central = [
            (loss(ahead) - loss(behind)) / (2 * step) for loss in losses for ahead, behind in moved
        ]
        rows.append((torch.stack(along), torch.stack(central)))
        if draw in (0, TIMED - 1):  # the first draw warms up: only a hopeless one stops there
            each = (time.perf_counter() - started) / (draw + 1)
            if each * DRAWS > budget_seconds * (TIMED if draw == 0 else 1):
                raise OverBudget(each)
    return torch.stack([a for a, _ in rows]), torch.stack([n for _, n in rows])


@dataclass(frozen=True)
class _Loss:
    """A fixed loss of forward's outputs: Σ ⟨w, y⟩, or ½ Σ ⟨w, y²⟩ where `squared`."""

    weights: tuple[torch.Tensor, ...]
    squared: bool = False

    def __call__(self, outputs: Sequence[torch.Tensor]) -> torch.Tensor:
        if self.squared:
            return 0.5 * _dot([o * o for o in outputs], self.weights)
        return _dot(outputs, self.weights)


def _losses(outputs: Sequence[torch.Tensor], generator: torch.Generator) -> list[_Loss]:
    """WEIGHTS linear losses, w normal or every other one positive (0.5..1.5), which a bias
    of one sign in every element (a factor, a dropped term) shows most along; then
    QUADRATIC ones, whose mean depends on the spread of the outputs (no linear part: its
    noise would hide a bias in the spread)."""
    return [
        *(_Loss(_weights(outputs, generator, n % 2 == 1)) for n in range(WEIGHTS)),
        *(_Loss(_weights(outputs, generator, n % 2 == 0), True) for n in range(QUADRATIC)),
    ]


def _weights(
    outputs: Sequence[torch.Tensor], generator: torch.Generator, positive: bool
) -> tuple[torch.Tensor, ...]:
    if positive:
        return tuple(seeded.uniform(o.shape, generator, o.device, o.dtype) + 0.5 for o in outputs)
    return tuple(seeded.normal(o.shape, generator, o.device, o.dtype) for o in outputs)


def _gradients(losses: Sequence[torch.Tensor], point: torch.Tensor) -> list[torch.Tensor]:
    """backward's gradient of each loss (zeros where there is no path to `point`)."""
    found = []
    for number, loss in enumerate(losses):
        with user_code("backward"):
            (gradient,) = torch.autograd.grad(
                loss, point, allow_unused=True, retain_graph=number < len(losses) - 1
            )
        found.append(torch.zeros_like(point) if gradient is None else gradient.detach())
    return found


def _moved(
    call: Callable[..., Any],
    leaves: Sequence[Any],
    index: int,
    seed: int,
    selected: Sequence[int],
    direction: torch.Tensor,
    step: float,
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The `selected` outputs a step ahead and a step behind along `direction`, every call
    of forward under `seed` (their central difference: the pathwise derivative of the draw)."""
    moved = [a.detach() if isinstance(a, torch.Tensor) else a for a in leaves]
    base = moved[index]
    moved[index] = base + step * direction
    ahead = _sampled(call, moved, seed, grad=False)
    moved[index] = base - step * direction
    behind = _sampled(call, moved, seed, grad=False)
    return [ahead[i] for i in selected], [behind[i] for i in selected]


def _dot(outputs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """Σ ⟨output, weight⟩ in float64."""
    total = weights[0].new_zeros((), dtype=torch.float64)
    for output, weight in zip(outputs, weights, strict=True):
        total = total + (output * weight).sum().to(torch.float64)
    return total


def _directions(point: torch.Tensor, generator: torch.Generator) -> list[torch.Tensor]:
    """Each element's own direction for a small argument; else DIRECTIONS random unit ones."""
    if point.numel() <= DIRECTIONS:
        return list(
            torch.eye(point.numel(), dtype=point.dtype, device=point.device).reshape(
                point.numel(), *point.shape
            )
        )
    drawn = [seeded.normal(point.shape, generator, point.device) for _ in range(DIRECTIONS)]
    return [v / v.norm().clamp_min(1e-300) for v in drawn]


def _rng_kept(arguments: Sequence[Any]) -> AbstractContextManager[None]:
    """The global RNGs (the CPU's and those of the arguments' CUDA devices) as they were."""
    return torch.random.fork_rng(devices=_cuda_devices(arguments))


@contextmanager
def _one_thread() -> Iterator[None]:
    """torch on one CPU thread inside, as many as before outside: thousands of small calls,
    where waking threads costs more than they share (40x on a busy 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _cuda_devices(arguments: Sequence[Any]) -> list[int]:
    found = {a.device.index or 0 for a in arguments if isinstance(a, torch.Tensor) and a.is_cuda}
    return sorted(found)


def _sampled(
    call: Callable[..., Any], arguments: Sequence[Any], seed: int, grad: bool
) -> list[Any]:
    """forward's outputs under `seed` of the global RNGs (the CPU's and those of the
    arguments' CUDA devices; not torch.manual_seed, whose lazy CUDA seeding costs a stack
    trace per call), as a list."""
    torch.random.default_generator.manual_seed(seed % (2**63))
    for device in _cuda_devices(arguments):
        with torch.cuda.device(device):
            torch.cuda.manual_seed(seed % (2**63))
    with user_code("forward"), torch.set_grad_enabled(grad):
        outputs = call(*arguments)
    return list(outputs) if isinstance(outputs, tuple | list) else [outputs]
