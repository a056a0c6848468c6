"""Judge every custom autograd Function of pytorch_wavelets 1.3.0 with plain gradcheck/gradgradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import torch
from pytorch_wavelets import (
    DTCWTForward,
    DTCWTInverse,
    DWT1DForward,
    DWT1DInverse,
    DWTForward,
    DWTInverse,
    ScatLayer,
    ScatLayerj2,
)
from pytorch_wavelets.dtcwt.transform_funcs import (
    FWD_J1,
    FWD_J2PLUS,
    INV_J1,
    INV_J2PLUS,
)
from pytorch_wavelets.dwt.lowlevel import (
    AFB1D,
    AFB2D,
    SFB1D,
    SFB2D,
    mode_to_int,
)
from pytorch_wavelets.scatternet.lowlevel import (
    ScatLayerj1_f,
    ScatLayerj1_rot_f,
    ScatLayerj2_f,
    ScatLayerj2_rot_f,
    SmoothMagFn,
)


def rand(*shape, grad=True):
    return torch.randn(*shape, dtype=D).requires_grad_(grad)


# The filters are the modules' own buffers (float64); the mode is the int code the modules pass.
fwd2 = DWTForward(J=1, wave="db2", mode="zero").double()
inv2 = DWTInverse(wave="db2", mode="zero").double()
fwd1 = DWT1DForward(J=1, wave="db2", mode="zero").double()
inv1 = DWT1DInverse(wave="db2", mode="zero").double()
m = mode_to_int("zero")
x4 = rand(1, 2, 6, 6)
judge(
    "AFB2D", lambda x: AFB2D.apply(x, fwd2.h0_col, fwd2.h1_col, fwd2.h0_row, fwd2.h1_row, m), (x4,)
)
low, highs = rand(1, 2, 4, 4), rand(1, 2, 3, 4, 4)
sfb2d = (inv2.g0_col, inv2.g1_col, inv2.g0_row, inv2.g1_row, m)
judge("SFB2D (low, highs)", lambda lo, hi: SFB2D.apply(lo, hi, *sfb2d), (low, highs))
# DWTInverse passes a constant lowpass where the caller's yl does not require grad.
low_c = low.detach()
judge("SFB2D (highs only)", lambda hi: SFB2D.apply(low_c, hi, *sfb2d), (highs,), second=False)
x3 = rand(2, 3, 9)
judge("AFB1D", lambda x: AFB1D.apply(x, fwd1.h0, fwd1.h1, m), (x3,))
lo1, hi1 = rand(2, 3, 6), rand(2, 3, 6)
judge("SFB1D (low, high)", lambda lo, hi: SFB1D.apply(lo, hi, inv1.g0, inv1.g1, m), (lo1, hi1))
lo1_c = lo1.detach()
judge(
    "SFB1D (high only)",
    lambda hi: SFB1D.apply(lo1_c, hi, inv1.g0, inv1.g1, m),
    (hi1,),
    second=False,
)

xf = DTCWTForward(J=2).double()
xi = DTCWTInverse().double()
mf = mode_to_int(xf.mode)
mi = mode_to_int(xi.mode)
xd = rand(1, 1, 8, 8)
judge(
    "FWD_J1",
    lambda x: FWD_J1.apply(x, xf.h0o, xf.h1o, False, xf.o_dim, xf.ri_dim, mf),
    (xd,),
)
xd2 = rand(1, 1, 8, 8)
judge(
    "FWD_J2PLUS",
    lambda x: FWD_J2PLUS.apply(x, xf.h0a, xf.h1a, xf.h0b, xf.h1b, False, xf.o_dim, xf.ri_dim, mf),
    (xd2,),
)
with torch.no_grad():
    yl, yh = xf(torch.randn(1, 1, 16, 16, dtype=D))
lows1 = rand(1, 1, 16, 16)
highs1 = yh[0].clone().requires_grad_()
judge(
    "INV_J1",
    lambda lo, hi: INV_J1.apply(lo, hi, xi.g0o, xi.g1o, xi.o_dim, xi.ri_dim, mi),
    (lows1, highs1),
)
lows2 = rand(1, 1, 8, 8)
highs2 = yh[1].clone().requires_grad_()
judge(
    "INV_J2PLUS",
    lambda lo, hi: INV_J2PLUS.apply(
        lo, hi, xi.g0a, xi.g1a, xi.g0b, xi.g1b, xi.o_dim, xi.ri_dim, mi
    ),
    (lows2, highs2),
)

a, b = rand(2, 3), rand(2, 3)
judge("SmoothMagFn (x, y)", lambda x, y: SmoothMagFn.apply(x, y, 1e-2), (a, b))
b_only = rand(2, 3)
a_c = a.detach()
judge("SmoothMagFn (y only)", lambda y: SmoothMagFn.apply(a_c, y, 1e-2), (b_only,), second=False)

s1 = ScatLayer().double()
s1r = ScatLayer(biort="near_sym_b_bp").double()
s1r.bandpass_diag = True
xs = rand(1, 1, 8, 8)
judge(
    "ScatLayerj1_f",
    lambda x: ScatLayerj1_f.apply(x, s1.h0o, s1.h1o, s1.mode, s1.magbias, False),
    (xs,),
)
judge(
    "ScatLayerj1_rot_f",
    lambda x: ScatLayerj1_rot_f.apply(x, s1r.h0o, s1r.h1o, s1r.h2o, s1r.mode, s1r.magbias, False),
    (xs,),
)
s2 = ScatLayerj2().double()
s2r = ScatLayerj2(biort="near_sym_b_bp", qshift="qshift_b_bp").double()
judge(
    "ScatLayerj2_f",
    lambda x: ScatLayerj2_f.apply(
        x, s2.h0o, s2.h1o, s2.h0a, s2.h0b, s2.h1a, s2.h1b, s2.mode, s2.magbias, False
    ),
    (xs,),
)
judge(
    "ScatLayerj2_rot_f",
    lambda x: ScatLayerj2_rot_f.apply(
        x,
        s2r.h0o,
        s2r.h1o,
        s2r.h2o,
        s2r.h0a,
        s2r.h0b,
        s2r.h1a,
        s2r.h1b,
        s2r.h2a,
        s2r.h2b,
        s2r.mode,
        s2r.magbias,
        False,
    ),
    (xs,),
)
