"""Functions for the run's handling of trouble in one target (tests/test_run_errors.py).

`Double` is correct. Imported with GRADVERIFY_TEST_INTERNAL_ERROR set to a case name (as a
worker imports it to load the target), it makes one of gradverify's own checks raise on that
case: an internal error injected inside gradverify's code, through the real run, with no
hook in the package. The variable is read at import, so the command's own process, which
never imports the target when isolated, is left as it is.

`Sleepy` is `Double` that, on a 7-element input, writes the file GRADVERIFY_TEST_MARKER names
and sleeps: a test knows then that the cases before it are done, and sends a Ctrl-C.

`OneHotRows` takes only an index tensor: inference guessed its indices from the sizes of
float tensors there are none of, a range [0, 0] that is no range (botorch's
OneHotArgmaxSTE stopped a whole package run so).
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch

INJECT = "GRADVERIFY_TEST_INTERNAL_ERROR"
MARKER = "GRADVERIFY_TEST_MARKER"
INJECTED_CHECK = "finite_difference"


class Double(torch.autograd.Function):
    """y = 2 x."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return 2 * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return 2 * grad_output


class Sleepy(torch.autograd.Function):
    """y = 2 x, slowly on 7 elements."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        if x.numel() == 7 and os.environ.get(MARKER):
            with open(os.environ[MARKER], "w", encoding="utf-8") as marker:
                marker.write("sleeping\n")
            time.sleep(120)
        return 2 * x

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return 2 * grad_output


class OneHotRows(torch.autograd.Function):
    """One-hot rows of the identity for `index`; no gradient flows to an index."""

    @staticmethod
    def forward(ctx: Any, index: torch.Tensor) -> torch.Tensor:
        return torch.eye(4, dtype=torch.float64)[index]

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> None:
        return None


def inject(case: str, check: str = INJECTED_CHECK) -> None:
    """Make `check` raise inside gradverify on the case named `case`, for this process."""
    from gradverify.checks import get_check

    kind = type(get_check(check))
    original = kind.run

    def run(self: Any, context: Any) -> Any:
        if context.case == case:
            raise RuntimeError(f"an internal error injected into {check}")
        return original(self, context)

    kind.run = run  # type: ignore[method-assign]


if os.environ.get(INJECT):
    inject(os.environ[INJECT])
