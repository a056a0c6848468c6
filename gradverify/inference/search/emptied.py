"""Guesses on which a slice comes out empty (issue 23): code that slices with literals
(`x[..., :4]` and `x[..., 4:]`, `V[:, :, :-4]`, `h[:-k]`) meant for sizes above the literal
computes something degenerate on a guessed size at or below it (an empty half, a sum of
nothing, a backward of exact zeros), though forward and backward run. Such a guess breaks
the Function's contract: a less preferred guess, never the place for a finding.

- `watching`, around the probe's forward and backward, notes the first slice
  (`Tensor.__getitem__` with a static index, `narrow`, the pieces of `split`, `tensor_split`,
  `chunk`) whose input has elements and whose result has none;
- `Preference` keeps searching past a guess on which one did: first the same guess with its
  small sizes enlarged (`enlarged`), then the other guesses; where nothing is found on which
  no slice empties, it keeps the first emptied guess, as the search did before. Where no
  guess ran well at all, the first that failed after a slice came out empty is tried
  enlarged before the search gives up.

Importing this module never imports torch; `watching` does.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from gradverify.inference.choice import TENSOR, Choice

# The ops that take a part of a tensor by literal positions or sizes.
SLICING = frozenset({"__getitem__", "narrow", "split", "tensor_split", "chunk", "split_with_sizes"})
# A dim of a guessed tensor from 2 to 5 grows by GROWTH (to 6 to 9): every slice whose
# literal bounds are at most 5 in size (`:4` and `4:`, `:-4`, `-5:`) then takes elements
# on each side; sizes stay distinct and equal sizes stay equal, so a square stays square
# and a dim two tensors share stays shared (past a size of 6 or more already there, so
# that none grows into it). A size of 1 is a broadcast or a kept dim.
SMALL = range(2, 6)
GROWTH = 4


@contextlib.contextmanager
def watching() -> Iterator[Callable[[], str | None]]:
    """While active, the first slice that came out empty of a tensor with elements, as
    `[..., 4:] of a [2, 4] tensor`: the context gives a function returning it (None: none
    did). It never changes a result, and never raises over what it watches."""
    watch = _watch_type()()
    with watch:
        yield lambda: watch.emptied


@functools.cache
def _watch_type() -> type[Any]:
    from torch.overrides import TorchFunctionMode

    class Watch(TorchFunctionMode):
        def __init__(self) -> None:
            super().__init__()
            self.emptied: str | None = None

        def __torch_function__(
            self,
            func: Any,
            types: Any,
            args: Sequence[Any] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            result = func(*args, **(kwargs or {}))
            if self.emptied is None and getattr(func, "__name__", "") in SLICING:
                with contextlib.suppress(Exception):  # watching never breaks a run
                    self.emptied = _emptied(func.__name__, args, result)
            return result

    return Watch


def _emptied(name: str, args: Sequence[Any], result: Any) -> str | None:
    """What came out empty, where the tensor sliced has elements and a part has none."""
    import torch

    source = args[0] if args else None
    if not isinstance(source, torch.Tensor) or source.numel() == 0:
        return None
    parts = result if isinstance(result, tuple | list) else (result,)
    if not any(isinstance(part, torch.Tensor) and part.numel() == 0 for part in parts):
        return None
    shape = list(source.shape)
    if name != "__getitem__":
        return f"{name} of a {shape} tensor"
    index = _static_index(args[1] if len(args) > 1 else None)
    return f"[{index}] of a {shape} tensor" if index is not None else None


def _static_index(key: Any) -> str | None:
    """`key` as written (`..., 4:`) where it is made of literals: slices, ints, `...` and
    None; a mask or an index tensor (data, not a literal) gives None."""
    parts = key if isinstance(key, tuple) else (key,)
    written = []
    for part in parts:
        if part is Ellipsis:
            written.append("...")
        elif part is None:
            written.append("None")
        elif type(part) is int:
            written.append(str(part))
        elif isinstance(part, slice) and all(
            bound is None or type(bound) is int for bound in (part.start, part.stop, part.step)
        ):
            bounds = [part.start, part.stop] + ([part.step] if part.step is not None else [])
            written.append(":".join("" if bound is None else str(bound) for bound in bounds))
        else:
            return None
    return ", ".join(written)


def enlarged(choices: Sequence[Choice], emptied: str) -> list[Choice] | None:
    """`choices` with each dim of 2 to 5 of their float and complex tensors GROWTH larger,
    the same size mapped the same way everywhere (module docstring); None where no tensor
    has such a dim. Each tensor that grew says why: the slice at its old shape."""
    tensors = [c for c in choices if c.kind == TENSOR and c.dtype.startswith(("float", "complex"))]
    large = [size for c in tensors for size in c.shape if size > SMALL[-1]]
    growth = max(GROWTH, max(large, default=0) + 1 - SMALL[0])
    grown = []
    for choice in choices:
        if choice not in tensors:
            grown.append(choice)
            continue
        shape = tuple(size + growth if size in SMALL else size for size in choice.shape)
        if shape == choice.shape:
            grown.append(choice)
            continue
        why = f"a slice came out empty at {list(choice.shape)}: {emptied}"
        reason = f"{choice.reason}; {why}" if choice.reason else why
        grown.append(replace(choice, shape=shape, reason=reason))
    return grown if list(grown) != list(choices) else None


class Preference:
    """The search's rule for guesses on which a slice came out empty: keep searching for
    one on which none does, the same guess enlarged first; `fallback` is the first emptied
    guess, kept where the search finds nothing better (exactly what it kept before).

    `settle` settles an assignment as the search does (None: nothing ran well near it);
    `emptied` says what came out empty when an assignment it settled on was probed."""

    def __init__(
        self,
        settle: Callable[[list[Choice]], list[Choice] | None],
        emptied: Callable[[Sequence[Choice]], str | None],
    ) -> None:
        self.settle = settle
        self.emptied = emptied
        self.fallback: list[Choice] | None = None

    def kept(self, found: list[Choice] | None) -> list[Choice] | None:
        """`found` where nothing emptied on it; else its enlarged variant, where that
        settles and nothing empties on it; else None (the search goes on)."""
        if found is None:
            return None
        emptied = self.emptied(found)
        if emptied is None:
            return found
        if self.fallback is None:
            self.fallback = found
        return self._enlarged(found, emptied)

    def rescued(self, failed: list[Choice] | None) -> list[Choice] | None:
        """A guess on which forward or backward failed after a slice came out empty (the
        max of an empty tail), enlarged, where that settles and nothing empties on it."""
        emptied = self.emptied(failed) if failed is not None else None
        return self._enlarged(failed, emptied) if failed and emptied is not None else None

    def _enlarged(self, guess: list[Choice], emptied: str) -> list[Choice] | None:
        variant = enlarged(guess, emptied)
        settled = self.settle(variant) if variant is not None else None
        if settled is not None and self.emptied(settled) is None:
            return settled
        return None
