"""gradverify: verify hand-written torch.autograd.Function gradients.

Importing this package must stay cheap: torch is imported only where a check runs.
"""

from __future__ import annotations

__version__ = "0.1.0"
