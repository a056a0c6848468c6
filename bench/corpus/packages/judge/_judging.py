"""What every judge script shares: the import path, torch's settings and `judge`.

Import it first: each script here is named like the package it judges (`entmax.py`), so this
folder must leave the import path before the package is imported.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import torch  # noqa: E402
from torch.autograd import gradcheck, gradgradcheck  # noqa: E402

# Small tensors: one thread, which does not spin against other work on a busy machine.
torch.set_num_threads(1)
torch.manual_seed(0)
D = torch.float64


def judge(name, fn, inputs, second=True, **kw):
    """Print plain gradcheck (and gradgradcheck) verdicts for fn on inputs, float64."""
    checks = [("gradcheck", gradcheck)] + ([("gradgradcheck", gradgradcheck)] if second else [])
    for label, check in checks:
        try:
            check(fn, inputs, **kw)
            msg = "pass"
        except Exception as e:  # the verdict is the output
            first = (str(e).strip().splitlines() or [""])[0]
            msg = f"FAIL ({type(e).__name__}: {first[:160]})"
        print(f"{name}: {label} {msg}", flush=True)
