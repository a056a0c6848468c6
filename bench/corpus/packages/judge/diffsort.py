"""Judge the custom autograd Function of diffsort 0.2.0 with plain gradcheck/gradgradcheck."""

from _judging import D, judge  # first: it takes this folder off the import path

# isort: split
import torch
from diffsort.functional import NormalCDF

# execute_sort(distribution="gaussian") passes pairwise differences v and sigma = 1 / steepness.
v = torch.randn(4, 5, dtype=D, requires_grad=True)
judge("NormalCDF sigma=0.1", lambda x: NormalCDF.apply(x, 0.1), (v,))
judge("NormalCDF sigma=1.0", lambda x: NormalCDF.apply(x, 1.0), (v,))
