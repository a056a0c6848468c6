"""GV106 for `lint`: an in-place change, in forward, to a tensor already saved for backward.

save_for_backward records a saved tensor's version only when forward (or setup_context)
has returned, so torch does not notice a change made later in the same method: backward
silently computes with the changed values (verified with torch 2.13, old and new style).
A change made before the tensor is saved, or to a clone of it, is fine.

forward (setup_context in the new style) is walked in the order Python runs it, as GV103
walks backward: a name passed to `ctx.save_for_backward(...)` is followed from that call on,
with its views, until it is rebound to something else.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from gradverify.checks.lint.inplace import InplaceVisitor, Origin, Write
from gradverify.checks.lint.methods import Method, is_name


@dataclass(frozen=True)
class SavedWrite:
    """An in-place write into a tensor after it was given to save_for_backward."""

    write: Write
    saved_line: int  # the save_for_backward call


def writes_after_save(method: Method) -> list[SavedWrite]:
    """In-place writes in `method` (forward or setup_context) into tensors it already saved."""
    visitor = _SavedVisitor(method.first)
    for statement in method.node.body:
        visitor.visit(statement)
    writes = sorted(visitor.writes.values(), key=lambda write: write.line)
    return [
        SavedWrite(write, visitor.saved_at[write.tensor])
        for write in writes
        if write.tensor in visitor.saved_at
    ]


class _SavedVisitor(InplaceVisitor):
    """Follows the names given to ctx.save_for_backward, from that call on."""

    def __init__(self, ctx: str | None) -> None:
        super().__init__(ctx, (), None)
        self.saved_at: dict[str, int] = {}

    def visit_Call(self, node: ast.Call) -> None:
        super().visit_Call(node)
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "save_for_backward"
            and is_name(func.value, self.ctx)
        ):
            for argument in node.args:
                if isinstance(argument, ast.Name):
                    self._set(argument.id, Origin(argument.id, False, None), None)
                    self.saved_at.setdefault(argument.id, node.lineno)
