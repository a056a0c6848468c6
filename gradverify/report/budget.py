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
    # a lesser form of the block with this key, shown only while that one is cut (a
    # target's line per finding, for its panels)
    within: Key | None = None

    @property
    def lines(self) -> int:
        return self.text.count("\n")


Layout = Callable[[frozenset[Key]], list[Block]]  # the blocks, those keys cut


def lines(blocks: Iterable[Block]) -> int:
    return sum(block.lines for block in blocks)


def fitted(
    layout: Layout, limit: int, said: Callable[[frozenset[Key]], str], alone: Layout
) -> list[Block]:
    """`layout`'s blocks within `limit` lines: in full where they fit, else with keys cut
    and `said(cut)` (lines ending in a newline) before the last block (the summary).

    `alone` lays the blocks out with no block pointing at another's (each target showing
    its own panels): a block's size there is about the most it takes, whichever others are
    cut, so blocks are put back by those sizes, and again while the real layout leaves room.
    """
    whole = layout(frozenset())
    if lines(whole) <= limit:
        return whole
    first = [block.key for block in whole if block.key is not None]
    middle = layout(frozenset(first))  # every block cut: their lesser forms show
    blocks = [*whole, *middle]
    keys = list(dict.fromkeys(block.key for block in blocks if block.key is not None))
    everything = frozenset(keys)
    full = {**_sizes(middle), **_sizes(alone(frozenset()))}
    short = _sizes(layout(everything))
    ranks = {block.key: block.rank for block in blocks if block.key is not None}
    lesser = {block.within: block.key for block in middle if block.within is not None}
    ranked = sorted(keys, key=lambda key: ranks[key])  # stable: report order within a rank
    cut_line = said(everything).count("\n")  # the lines that say what was cut
    kept: list[Key] = []
    refused: set[Key] = set()  # put back once and found larger than its size alone
    while True:
        shown = layout(everything - frozenset(kept))
        used = lines(shown) + cut_line
        if used > limit and kept:
            refused.add(kept.pop())  # with a `same in` row, say: cut again, for good
            continue
        added = False
        for key in ranked:
            if key in kept or key in refused:
                continue
            replaced = lesser.get(key)  # a block in full no longer shows its lesser form
            saved = full.get(replaced, 0) if replaced in kept else 0
            extra = full.get(key, 0) - short.get(key, 0) - saved
            if used + extra <= limit:
                kept.append(key)
                used += extra
                added = True
        if not added:
            cut = everything - frozenset(kept)
            return [*shown[:-1], Block(said(cut)), *shown[-1:]]


def _sizes(blocks: Iterable[Block]) -> dict[Key, int]:
    sizes: dict[Key, int] = {}
    for block in blocks:
        if block.key is not None:
            sizes[block.key] = sizes.get(block.key, 0) + block.lines
    return sizes
