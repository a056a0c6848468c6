"""The quadratic-fit residual that kink and noise detection read."""

from __future__ import annotations

import torch

from gradverify.numerics.sampling import OFFSETS, fit_residual


def test_a_quadratic_has_no_residual_and_a_kink_has_one():
    t = torch.tensor(OFFSETS, dtype=torch.float64)
    smooth = torch.stack([1 + 2 * t + 3 * t**2, -(t**2)], dim=1)  # [samples, rows]
    assert fit_residual(smooth).abs().max() < 1e-12
    kinked = torch.stack([t.clamp(min=0), t.abs()], dim=1)
    assert (fit_residual(kinked) > 0.01).all()


def test_the_residual_is_the_distance_from_the_least_squares_fit():
    generator = torch.Generator().manual_seed(0)
    values = torch.randn(len(OFFSETS), 300, generator=generator, dtype=torch.float64)
    values[2, 7] = float("nan")  # non-finite samples count as 0
    design = torch.stack(
        [torch.ones(len(OFFSETS)), torch.tensor(OFFSETS), torch.tensor(OFFSETS) ** 2], 1
    )
    fit = design.double() @ torch.linalg.lstsq(design.double(), torch.nan_to_num(values)).solution
    expected = (torch.nan_to_num(values) - fit).abs().amax(dim=0)
    assert torch.allclose(fit_residual(values), expected, atol=1e-12)
