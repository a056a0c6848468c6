"""Rounding noise: a forward (or a backward) that computes in float32 inside a float64 case.

Its outputs are rough everywhere at the size of float32 rounding, so samples along a line
leave a quadratic-fit residual, as at a kink, and its central differences are off by about
2^-24·|f| / eps: 0.06 for |f| = 1 and eps = 1e-6. That is lost precision, a finding of its
own, never a non-differentiable point to excuse or to draw inputs away from. Two things tell
the noise from a kink or a jump:

- size: the residual is no larger than float32 rounding of the values, and of the input
  through the slope, could leave. A kink can be that faint too (a clamp at 1 leaves
  ~0.07·eps), so size alone decides nothing;
- the slope over a tiny step (eps/4096, two forward calls). Next to a kink it is one of the
  one-sided slopes, at the kink their mean (the central difference), and a smooth function
  has its central difference. Rounding to float32 is a staircase at that scale: the step sees
  a flat tread (slope 0) or a riser of one float32 unit (slope ~100·|f|), neither of those,
  unless a one-sided slope is 0 too (a shallow slope, treads longer than eps/2). There the
  riser within [x - eps, x + eps] is a faint jump: the central difference lies outside the
  one-sided slopes, where a kink keeps it between them. And a forward that returns its
  float32 result shows it in the values: all float32 numbers.

Windows of samples 3·eps away, or at half the step, tell less: a float32 staircase sampled
at a step near a multiple of its tread is a straight line with one riser, smooth to float64
rounding in 3 windows of 100 (the float32 sine at x = 0.7855 with eps = 1e-6, for one).

A kink as faint as the noise cannot be told from it in a function that shows noise: once
callers have seen noise, they count faint roughness as noise too.
"""

from __future__ import annotations

import torch

from gradverify.numerics.sampling import OFFSETS, Line, fit_residual

FLOAT32_ROUNDING = 2.0**-24
FLOAT64_ROUNDING = 2.0**-53
# float32 roundings of the values (and of the input, through the slope) that noise may reach:
# a forward that rounds its input and its output to float32 leaves about 1; the margin is
# for float32 intermediates larger than either.
NOISE_ULPS = 32.0
TINY = 2.0**-12  # the tiny step, in units of eps: far below a float32 unit of x and of f
# float64 roundings allowed in f(x ± tiny) before their slope is called inconsistent
ROUNDING_ULPS = 64.0  # float64 units in the last place allowed per rounding sum


def reach(values: torch.Tensor, eps: float, x_scale: float | torch.Tensor) -> torch.Tensor:
    """Per row, how far float32 rounding could move the samples `values`.

    `x_scale` is the size of the input along the line: rounding x to float32 moves f by up
    to 2^-24·|x|·|slope|. A central difference moves by up to reach / eps.
    """
    safe = torch.where(torch.isfinite(values), values, torch.zeros_like(values))
    # The smaller one-sided slope: a jump between the samples inflates the other one.
    half = eps * (OFFSETS[1] - OFFSETS[0])
    left, right = (safe[1] - safe[0]).abs() / half, (safe[-1] - safe[-2]).abs() / half
    slope = torch.minimum(left, right)
    return NOISE_ULPS * FLOAT32_ROUNDING * (safe.abs().amax(dim=0) + x_scale * slope)


def faint_rows(values: torch.Tensor, eps: float, x_scale: float | torch.Tensor) -> torch.Tensor:
    """Rows whose residual is no larger than float32 rounding could leave (bool)."""
    finite = torch.isfinite(values).all(dim=0)
    return finite & (fit_residual(values) <= reach(values, eps, x_scale))


def noise_rows(
    line: Line,
    values: torch.Tensor,
    eps: float,
    candidates: torch.Tensor,
    atol: float,
    rtol: float,
) -> torch.Tensor:
    """Of the `candidates` (rough and faint rows of `values`, sampled on `line` at
    OFFSETS·eps), those whose roughness is rounding noise: every value is a float32 number,
    or the slope over a tiny step is none of the one-sided slopes nor the central
    difference. Two forward calls."""
    if not bool(candidates.any()):
        return candidates
    tiny = TINY * eps
    plus, minus = line(tiny), line(-tiny)
    every = torch.cat([values, plus.unsqueeze(0), minus.unsqueeze(0)])
    # Where the tread of the staircase is longer than the tiny step and a one-sided slope
    # is 0 (a shallow slope), only the values themselves show the rounding.
    in_float32 = (every.to(torch.float32).to(every.dtype) == every).all(dim=0)
    slope = (plus - minus) / (2 * tiny)
    half = eps * (OFFSETS[1] - OFFSETS[0])
    left, right = (values[1] - values[0]) / half, (values[-1] - values[-2]) / half
    central = (values[-1] - values[0]) / (2 * eps * OFFSETS[-1])
    safe = torch.where(torch.isfinite(values), values, torch.zeros_like(values))
    rounding = ROUNDING_ULPS * FLOAT64_ROUNDING * safe.abs().amax(dim=0) / tiny
    consistent = torch.zeros_like(candidates)
    for expected in (left, right, central):
        consistent |= (slope - expected).abs() <= atol + rtol * expected.abs() + rounding
    # A faint step up or down is a riser of the staircase: a kink keeps the central
    # difference between the one-sided slopes, and a jump that faint is noise as well.
    slack = atol + rtol * torch.maximum(left.abs(), right.abs())
    low, high = torch.minimum(left, right) - slack, torch.maximum(left, right) + slack
    riser = (central < low) | (central > high)
    return candidates & (in_float32 | ~consistent | riser)


def rounding_hint(elements: int, function: str = "forward", at_least: bool = False) -> str:
    """The likely cause of mismatches that are all rounding noise of `function`; `at_least`
    when the elements are only those localization found."""
    if at_least:
        spread = f"at every entry localized ({elements})"
    else:
        spread = f"spread over {elements} elements" if elements > 1 else "at 1 element"
    return (
        f"errors of the size of float32 rounding {spread}: forward or backward computes in "
        f"float32? ({function}'s values are rough at float32 precision around them, where a "
        "float64 computation is smooth, so central differences cannot match); a case declared "
        "`dtype: float32` checks such a kernel in float32, or a `reference:` can"
    )
