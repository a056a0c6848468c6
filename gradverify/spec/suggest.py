"""Close-match suggestions for misspelt keys, names and attributes."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ` (did you mean 'x'?)` suffix, or an empty string when nothing is close."""
    matches = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return f" (did you mean {matches[0]!r}?)" if matches else ""
