"""gradverify: verify hand-written torch.autograd.Function gradients.

Importing this package must stay cheap: torch is imported only where a check runs.
"""

from __future__ import annotations

from gradverify._version import __version__

# Not typing's: the console script imports this package before it owns Ctrl-C
# (gradverify.__main__), and importing typing took 2 of the 3 ms in which a Ctrl-C still
# ended the command with a traceback. Type checkers read any TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gradverify.api import GradverifyWarning, assert_gradients, verify

# The Python API, imported on first use so that `import gradverify` stays torch-free.
_API = ("verify", "assert_gradients", "GradverifyWarning")

__all__ = ["GradverifyWarning", "__version__", "assert_gradients", "verify"]


def __getattr__(name: str) -> Any:
    if name in _API:
        from gradverify import api

        return getattr(api, name)
    raise AttributeError(f"module 'gradverify' has no attribute {name!r}")
