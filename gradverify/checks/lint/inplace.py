"""GV103 for `lint`: in-place writes in backward into grad_output or a saved tensor.

backward is walked statement by statement in the order Python runs it, following which
names hold a grad_output, a saved tensor, or a view of one; rebinding a name to anything
else stops following it, so `g = grad_output.clone(); g.mul_(2)` is fine.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from gradverify.checks.lint.methods import SAVED_CONTAINERS, Method, constant_int, is_name, snippet

# Tensor methods whose result shares memory with the tensor they are called on (always, or
# for the usual contiguous grad_output): writing into the result writes into the original.
# fmt: off
VIEW_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze",
    "expand", "expand_as", "t", "transpose", "swapaxes", "swapdims", "permute", "movedim",
    "moveaxis", "narrow", "select", "diagonal", "unfold", "as_strided", "detach", "contiguous",
})
# fmt: on
VIEW_ATTRIBUTES = frozenset({"data", "T", "mT", "H", "mH", "real", "imag"})
# Trailing-underscore methods that change only autograd or storage metadata, not values.
NOT_INPLACE = frozenset({"requires_grad_", "share_memory_"})
TORCH_NAMESPACES = frozenset({"torch", "F"})


@dataclass(frozen=True)
class Write:
    """An in-place write in backward into grad_output or a saved tensor."""

    line: int
    code: str
    tensor: str  # the name it was written through or derived from
    grad_output: bool  # False: a saved tensor
    output_index: int | None


def inplace_writes(backward: Method) -> list[Write]:
    """In-place writes in backward into its grad_outputs or into tensors from ctx.saved_tensors."""
    ctx, grads = backward.first, backward.parameters[1:]
    visitor = InplaceVisitor(ctx, grads, backward.vararg)
    for statement in backward.node.body:
        visitor.visit(statement)
    return sorted(visitor.writes.values(), key=lambda write: write.line)


@dataclass(frozen=True)
class Origin:
    tensor: str
    grad_output: bool
    output_index: int | None


def _is_inplace(method: str) -> bool:
    return method.endswith("_") and not method.endswith("__") and method not in NOT_INPLACE


def _basic_index(index: ast.expr) -> bool:
    """An index that selects a view (ints, slices, None, ...), not a copy (a mask, a list)."""
    if isinstance(index, ast.Tuple):
        return all(_basic_index(element) for element in index.elts)
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        return _basic_index(index.operand)
    if isinstance(index, ast.Slice):
        return True
    return isinstance(index, ast.Constant) and (
        index.value is None or index.value is Ellipsis or type(index.value) is int
    )


class InplaceVisitor(ast.NodeVisitor):
    """Walks backward in source order, following which names hold grad_outputs, saved
    tensors or views of them; a rebinding to anything else stops following the name."""

    def __init__(self, ctx: str | None, grads: tuple[str, ...], vararg: str | None) -> None:
        self.ctx = ctx
        self.tensors = {name: Origin(name, True, index) for index, name in enumerate(grads)}
        self.containers: dict[str, Origin] = {}
        if vararg is not None:
            self.containers[vararg] = Origin(vararg, True, None)
        self.writes: dict[tuple[int, str], Write] = {}

    # What an expression is.
    def _container(self, node: ast.expr | None) -> Origin | None:
        if isinstance(node, ast.Name):
            return self.containers.get(node.id)
        if (
            isinstance(node, ast.Attribute)
            and node.attr in SAVED_CONTAINERS
            and is_name(node.value, self.ctx)
        ):
            return Origin(f"ctx.{node.attr}", False, None)
        return None

    @staticmethod
    def _element(container: Origin, position: int | None, name: str | None) -> Origin:
        label = name or f"{container.tensor}[{'...' if position is None else position}]"
        return Origin(label, container.grad_output, position if container.grad_output else None)

    def _origin(self, node: ast.expr | None) -> Origin | None:
        if isinstance(node, ast.Name):
            return self.tensors.get(node.id)
        if isinstance(node, ast.Subscript):
            container = self._container(node.value)
            if container is not None:
                return self._element(container, constant_int(node.slice), None)
            return self._origin(node.value) if _basic_index(node.slice) else None
        if isinstance(node, ast.Attribute) and node.attr in VIEW_ATTRIBUTES:
            return self._origin(node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in VIEW_METHODS or _is_inplace(method):
                return self._origin(node.func.value)
        if isinstance(node, ast.NamedExpr):
            return self._origin(node.value)
        return None

    def _is_namespace(self, node: ast.expr) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in TORCH_NAMESPACES

    # Bindings.
    def _forget(self, name: str) -> None:
        self.tensors.pop(name, None)
        self.containers.pop(name, None)

    def _set(self, name: str, origin: Origin | None, container: Origin | None) -> None:
        self._forget(name)
        if origin is not None:
            self.tensors[name] = origin
        elif container is not None:
            self.containers[name] = container

    def _bind(self, target: ast.expr, value: ast.expr | None, statement: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._set(target.id, self._origin(value), self._container(value))
        elif isinstance(target, ast.Tuple | ast.List):
            self._bind_unpacked(target, value, statement)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, None, statement)
        elif isinstance(target, ast.Subscript):
            origin = self._origin(target.value)
            if origin is not None:
                self._write(statement, origin)

    def _bind_unpacked(
        self, target: ast.Tuple | ast.List, value: ast.expr | None, statement: ast.AST
    ) -> None:
        elements = target.elts
        if (
            isinstance(value, ast.Tuple | ast.List)
            and len(value.elts) == len(elements)
            and not any(isinstance(e, ast.Starred) for e in (*elements, *value.elts))
        ):
            # All values are evaluated before any name is bound: `g, h = h, g` swaps.
            resolved = [(self._origin(v), self._container(v)) for v in value.elts]
            for element, element_value, (origin, container) in zip(
                elements, value.elts, resolved, strict=True
            ):
                if isinstance(element, ast.Name):
                    self._set(element.id, origin, container)
                else:
                    self._bind(element, element_value, statement)
            return
        container = self._container(value)
        starred = False  # positions after `*rest` are not known
        for position, element in enumerate(elements):
            starred = starred or isinstance(element, ast.Starred)
            if container is not None and isinstance(element, ast.Name):
                origin = self._element(container, None if starred else position, element.id)
                self._set(element.id, origin, None)
            else:
                self._bind(element, None, statement)

    def _bind_loop(self, target: ast.expr, iterable: ast.expr, statement: ast.AST) -> None:
        container = self._container(iterable)
        if container is not None and isinstance(target, ast.Name):
            self._set(target.id, self._element(container, None, target.id), None)
        else:
            self._bind(target, None, statement)

    def _write(self, node: ast.AST, origin: Origin) -> None:
        line = getattr(node, "lineno", 0)
        write = Write(line, snippet(node), origin.tensor, origin.grad_output, origin.output_index)
        self.writes.setdefault((line, origin.tensor), write)

    # Statements and expressions, in the order Python evaluates them.
    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._bind(target, node.value, node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._bind(node.target, node.value, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        target = node.target
        origin = self._origin(target.value if isinstance(target, ast.Subscript) else target)
        if origin is not None:
            self._write(node, origin)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._bind(node.target, node.value, node)

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute):
            if self._is_namespace(func.value):
                inplace = _is_inplace(func.attr) or any(
                    k.arg == "inplace"
                    and isinstance(k.value, ast.Constant)
                    and k.value.value is True
                    for k in node.keywords
                )
                origin = self._origin(node.args[0]) if inplace and node.args else None
            else:
                origin = self._origin(func.value) if _is_inplace(func.attr) else None
            if origin is not None:
                self._write(node, origin)
        for keyword in node.keywords:
            origin = self._origin(keyword.value) if keyword.arg == "out" else None
            if origin is not None:
                self._write(node, origin)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self._bind_loop(node.target, node.iter, node)
        for statement in (*node.body, *node.orelse):
            self.visit(statement)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._bind(item.optional_vars, None, node)
        for statement in node.body:
            self.visit(statement)

    visit_AsyncWith = visit_With

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        outer = (dict(self.tensors), dict(self.containers))
        for generator in node.generators:
            self.visit(generator.iter)
            self._bind_loop(generator.target, generator.iter, node)
            for condition in generator.ifs:
                self.visit(condition)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)
        self.tensors, self.containers = outer

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def _nested_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self._forget(node.name)  # its body runs elsewhere, with names of its own

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _nested_scope

    def visit_Lambda(self, node: ast.Lambda) -> None:
        return None

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._forget(node.name)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                self._forget(target.id)

    def _imported(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            self._forget(alias.asname or alias.name.split(".")[0])

    visit_Import = visit_ImportFrom = _imported

    def _captured(self, node: ast.MatchAs | ast.MatchStar | ast.MatchMapping) -> None:
        name = node.rest if isinstance(node, ast.MatchMapping) else node.name
        if name:
            self._forget(name)
        self.generic_visit(node)

    visit_MatchAs = visit_MatchStar = visit_MatchMapping = _captured
