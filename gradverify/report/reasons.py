"""Why something was skipped or left unchecked, in one line of the text report.

A skip or an unchecked Function may carry torch's whole complaint: `Could not run
'aten::empty' with arguments from the 'CUDA' backend ...` followed by every backend torch
knows, a line each. The text report says the reason in one line (`needs CUDA (this machine
has none)`); the JSON report keeps the whole of it.
"""

from __future__ import annotations

import re

LIMIT = 160  # characters of a reason shown
# `needs CUDA (this machine has none)`, `needs triton (not installed)`: that says it all.
_NEEDS = re.compile(r"^needs [^:(]+\([^)]*\)")
# torch's sentences that list its backends or guess at the cause, up to the end.
_TORCH_TAIL = re.compile(
    r"\s*(?:This could be because|'[^']+' is only available for these backends|"
    r"If you are a Facebook employee).*$"
)
_LIST = re.compile(r"\[[^\]]{60,}\]")  # a long bracketed list (backends, keys)


def one_line(reason: str, limit: int = LIMIT) -> str:
    """`reason` in one line of at most `limit` characters (plus ` ...` where cut)."""
    text = reason.strip()
    needs = _NEEDS.match(text)
    if needs is not None:
        return needs.group(0)
    first = text.splitlines()[0].strip() if text else ""
    first = _LIST.sub("[...]", _TORCH_TAIL.sub("", first)) or first
    if len(first) <= limit:
        return first
    cut = first[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return f"{cut} ..."
