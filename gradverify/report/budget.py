"""A text report that fits a screen: at most `max_lines` lines, whatever fails.

The report is written as blocks: run notes, a block per target, the coverage's reasons, and
lines always printed (the coverage's head, each unchecked Function's name, the summary).
When all of it is longer than the budget, every target starts as its one status line and
the rest of each block is put back in order of importance, as long as it fits: targets that
failed first, then those that warned, then the others, then notes and reasons. One line
before the summary says what was left out and that `-v` shows it all. The JSON, JUnit,
SARIF, GitHub and HTML reports keep every result.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

Key = Hashable  # what a block is part of: ("target", name), ("note", 3), ...


@dataclass(frozen=True)
class Block:
    """Rendered lines of the report; `key`: what may be cut (None: always printed in full);
    `rank`: the lower, the sooner it is put back."""

    text: str
    key: Key | None = None
    rank: int = 0

    @property
    def lines(self) -> int:
        return self.text.count("\n")


Layout = Callable[[frozenset[Key]], list[Block]]  # the blocks, those keys cut


def lines(blocks: Iterable[Block]) -> int:
    return sum(block.lines for block in blocks)


def fitted(layout: Layout, limit: int, said: Callable[[frozenset[Key]], str]) -> list[Block]:
    """`layout`'s blocks within `limit` lines: in full where they fit, else with keys cut
    and `said(cut)` (a line ending in a newline) before the last block (the summary)."""
    whole = layout(frozenset())
    if lines(whole) <= limit:
        return whole
    keys = list(dict.fromkeys(block.key for block in whole if block.key is not None))
    everything = frozenset(keys)
    least = layout(everything)
    full, short = _sizes(whole), _sizes(least)
    ranks = {block.key: block.rank for block in whole if block.key is not None}
    cut_line = said(everything).count("\n")  # the lines that say what was cut
    used = lines(least) + cut_line
    kept: list[Key] = []
    for key in sorted(keys, key=lambda key: ranks[key]):  # stable: report order within a rank
        extra = full.get(key, 0) - short.get(key, 0)
        if used + extra <= limit:
            kept.append(key)
            used += extra
    while True:
        cut = everything - frozenset(kept)
        blocks = layout(cut)
        if lines(blocks) + cut_line <= limit or not kept:
            return [*blocks[:-1], Block(said(cut)), *blocks[-1:]]
        kept.pop()  # a finding shown by one target moved to another: one more cut


def _sizes(blocks: Iterable[Block]) -> dict[Key, int]:
    sizes: dict[Key, int] = {}
    for block in blocks:
        if block.key is not None:
            sizes[block.key] = sizes.get(block.key, 0) + block.lines
    return sizes
