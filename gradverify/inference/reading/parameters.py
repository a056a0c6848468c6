"""What the code says of each parameter's kind, shape and structure, read without running
it: conventional names (`fn`, `out`, `shape`, `mask`, `L`), annotations (jaxtyping's
`Float[Tensor, "B N 9"]` parsed as a string, `Callable`), the docstrings of the Function
and of forward (`points: (B, N, 9)`, `A (Tensor): symmetric positive definite`), forward's
asserts (`assert x.shape[-1] == 9`, `x.dim() == 3`) and the ops forward applies to a
parameter (`cholesky` asks for an SPD matrix, `eigh` a symmetric one).

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import inspect
import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from gradverify.inference.reading.contract import Contract
from gradverify.inference.reading.docstrings import documented
from gradverify.inference.reading.facts import code_facts
from gradverify.inference.reading.quadratic import quadratic_forms
from gradverify.inference.reading.sparse import sparse_operands
from gradverify.target.syntax import called_name, is_module, own_nodes, parsed_function

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

CALLABLE, SHAPE, OUT, MASK = "callable", "shape", "out", "mask"
NAMED_KINDS = (
    (re.compile(r"^(fn|func|function|callback|f|fun|closure|odefunc|func_\w+|\w+_fn|\w+_func)$"), CALLABLE),
    (re.compile(r"^(shape|size|sizes|output_shape|out_shape|sample_shape)$"), SHAPE),
    (re.compile(r"^out$"), OUT),
    (re.compile(r"^(\w+_)?mask$", re.IGNORECASE), MASK),
)  # fmt: skip
# A Cholesky factor by its name: lower-triangular with a positive diagonal.
TRIANGULAR_NAMES = re.compile(r"^(L|chol|cholesky|scale_tril|\w+_chol|chol_\w+|L_\w+)$")
# Ops forward may apply to a parameter, the argument position (as torch.* writes it) that
# gets the structure, and the structure (None: read `upper=` for lower or upper).
STRUCTURE_OPS: dict[str, tuple[int, str | None]] = {
    "cholesky": (0, "spd"), "cholesky_ex": (0, "spd"), "eigh": (0, "symmetric"),
    "eigvalsh": (0, "symmetric"), "solve_triangular": (0, None), "triangular_solve": (1, None),
    "cholesky_solve": (1, "lower"), "cholesky_inverse": (0, "lower"), "inv": (0, "invertible"),
    "inverse": (0, "invertible"), "solve": (0, "invertible"), "det": (0, "invertible"),
    "slogdet": (0, "invertible"), "logdet": (0, "invertible"), "inv_ex": (0, "invertible"),
}  # fmt: skip
# `torch.triangular_solve` is upper by default, `torch.linalg.solve_triangular` says which.
UPPER_BY_DEFAULT = frozenset({"triangular_solve"})
# Sizes given to the named dims of a shape, in order of first appearance (distinct names
# get distinct sizes, so that a backward mixing N and M up shows); a batch dim gets 2.
SIZES = (3, 4, 5, 6, 7, 8)
BATCH_NAMES = frozenset({"B", "b", "batch", "N_batch", "bs"})
JAXTYPING = re.compile(r"\w+\[\s*[\w.]+\s*,\s*['\"]([^'\"]*)['\"]\s*\]")


def read_contract(target: Target) -> dict[str, Contract]:
    """Each parameter's contract, as far as the code says; parameters it says nothing of
    are left out."""
    if target.op is not None or not target.is_function:
        return {}
    forward = getattr(target.obj, "forward", None)
    parameters = [name for name in target.parameters if name not in target.defaults]
    found: dict[str, Contract] = {}
    readers = (_by_name, _annotated, _documented, _asserted, _applied, sparse_operands)
    for reader in (*readers, quadratic_forms):
        for name, contract in reader(target, forward, parameters).items():
            found[name] = found[name].merged(contract) if name in found else contract
    return found


def rank_stated(reason: str) -> bool:
    """Whether a choice's reason says the code stated its shape (a docstring's `(N, C)`, a
    jaxtyping annotation, an assert): a case at another rank is outside the contract."""
    return any(
        part.startswith(("docstring:", "forward requires", "forward raises where"))
        or (part.startswith("annotated ") and "[" in part)
        for part in reason.split("; ")
    )


def concrete_shape(contract: Contract, symbols: dict[str, int]) -> tuple[int, ...] | None:
    """A shape that keeps `contract`, named dims sized from `symbols` (filled in as met)."""
    # a named dim never takes the size of a literal one: N = 3 beside a literal 3 would
    # hide a backward that mixes them up
    literal = {int(d) for d in contract.dims or () if d.isdigit()} | {n for _, n in contract.sizes}
    if contract.dims is not None:
        shape = [
            _size(dim, symbols, literal, dim in contract.odd)
            for dim in contract.dims
            if not _variadic(dim)
        ]
    elif contract.rank is not None or contract.sizes:
        rank = contract.rank or max(2, *(d + 1 if d >= 0 else -d for d, _ in contract.sizes))
        free = [size for size in SIZES if size not in literal]
        shape = [2, *free[: rank - 1]][:rank] if rank > 1 else free[:1]
    else:
        return None
    for dim, size in contract.sizes:
        if -len(shape) <= dim < len(shape):
            shape[dim] = size
    return tuple(shape)


# A named dim with arithmetic, as docstrings write a pyramid's levels or a sequence's
# differences: `H/2`, `H//2`, `2*N`, `N*2`, `T-1`, `K+1`.
EXPRESSION = re.compile(r"^(?:(\d+)\s*\*\s*)?([A-Za-z_]\w*)(?:\s*(//|/|\*|\+|-)\s*(\d+))?$")


def divided_symbols(contracts: Iterable[Contract]) -> dict[str, int]:
    """Sizes for the named dims that a documented shape divides (`coarse: [H/2, W/2]`
    beside `fine: [H, W]`): each a distinct size of SIZES that its divisors divide, so that
    `H/2` is whole (H = 4, W = 6); the other names are sized as they are met."""
    divisors: dict[str, int] = {}
    for contract in contracts:
        for dim in contract.dims or ():
            found = EXPRESSION.match(dim.replace(" ", ""))
            if found and found.group(3) in ("/", "//") and int(found.group(4)) > 1:
                name, divisor = found.group(2), int(found.group(4))
                divisors[name] = math.lcm(divisors.get(name, 1), divisor)
    symbols: dict[str, int] = {}
    for name, divisor in divisors.items():  # 2, 3, ... times the divisor: one is free
        multiples = (n * divisor for n in range(2, len(divisors) + 3))
        symbols[name] = next(size for size in multiples if size not in symbols.values())
    return symbols


def _size(dim: str, symbols: dict[str, int], literal: set[int], odd: bool = False) -> int:
    found = EXPRESSION.match(dim.replace(" ", ""))
    if found and (found.group(1) or found.group(3)):
        base = _size(found.group(2), symbols, literal)
        factor = int(found.group(1) or 1)
        operation, number = found.group(3), int(found.group(4) or 0)
        if operation in ("/", "//"):
            return max(1, factor * base // max(number, 1))
        if operation == "*":
            return factor * base * number
        if operation in ("+", "-"):
            return max(1, factor * base + (number if operation == "+" else -number))
        return factor * base
    name = dim.lstrip("#").lstrip("_") or dim
    if name.isdigit():
        return int(name)
    if name in BATCH_NAMES and not odd:
        return 2
    if name not in symbols:
        used = set(symbols.values()) | literal
        sizes = [size for size in SIZES if size % 2 or not odd]
        symbols[name] = next((size for size in sizes if size not in used), sizes[-1])
    return symbols[name]


def _variadic(dim: str) -> bool:
    return dim.startswith("*") or dim == "..."


def _by_name(target: Target, forward: Any, parameters: list[str]) -> dict[str, Contract]:
    found = {}
    for name in parameters:
        kind = next((kind for pattern, kind in NAMED_KINDS if pattern.match(name)), None)
        if kind is not None:
            found[name] = Contract(kind=kind, reasons=(f"named {name}",))
        elif TRIANGULAR_NAMES.match(name):
            found[name] = Contract(structure="lower", reasons=(f"named {name}: a Cholesky factor",))
    return found


def _annotated(target: Target, forward: Any, parameters: list[str]) -> dict[str, Contract]:
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return {}
    found = {}
    for name in parameters:
        parameter = signature.parameters.get(name)
        if parameter is None or parameter.annotation is parameter.empty:
            continue
        text = (
            parameter.annotation
            if isinstance(parameter.annotation, str)
            else str(parameter.annotation)
        )
        shaped = JAXTYPING.search(text)
        if shaped:
            dims = tuple(shaped.group(1).split())
            found[name] = Contract(dims=dims, reasons=(f"annotated {shaped.group(0)}",))
        elif re.search(r"\bCallable\b", text):
            found[name] = Contract(kind=CALLABLE, reasons=("annotated Callable",))
    return found


def _documented(target: Target, forward: Any, parameters: list[str]) -> dict[str, Contract]:
    """A docstring entry of a parameter (gradverify.inference.reading.docstrings): its shape, the
    structure its words ask for, and whether it is a constant."""
    texts = code_facts(target).docstrings  # forward is the class's own: read once
    found = {}
    for name, said in documented(texts, parameters).items():
        found[name] = Contract(
            dims=said.dims,
            structure=said.structure,
            reasons=(f"docstring: {said.line}",),
            constant=said.constant,
            odd=said.odd,
            loose=said.loose,
            integer=said.integer,
        )
    return found


def _asserted(target: Target, forward: Any, parameters: list[str]) -> dict[str, Contract]:
    """`assert x.shape[-1] == 9`, `x.dim() == 3`, `x.ndim == 3`, `x.size(1) == 3`, and the
    same in `if x.shape[-1] != 9: raise ...`."""
    node = parsed_function(forward)
    if node is None:
        return {}
    found: dict[str, Contract] = {}
    for test in _required(node):
        for name, contract in _shape_facts(test, set(parameters)):
            found[name] = found[name].merged(contract) if name in found else contract
    return found


def _required(function: ast.AST) -> list[ast.Compare]:
    """The comparisons forward requires: asserted, or negated by an `if ...: raise`."""
    required = []
    for child in own_nodes(function):  # type: ignore[arg-type]
        if isinstance(child, ast.Assert):
            required += _comparisons(child.test, ast.Eq)
        elif isinstance(child, ast.If) and any(isinstance(s, ast.Raise) for s in child.body):
            required += _comparisons(child.test, ast.NotEq)
    return required


def _comparisons(test: ast.AST, operator: type) -> list[ast.Compare]:
    parts = test.values if isinstance(test, ast.BoolOp) else [test]
    return [
        part
        for part in parts
        if isinstance(part, ast.Compare)
        and len(part.ops) == 1
        and isinstance(part.ops[0], operator)
    ]


def _shape_facts(compare: ast.Compare, names: set[str]) -> list[tuple[str, Contract]]:
    sides = [compare.left, compare.comparators[0]]
    facts = []
    for read, other in (sides, sides[::-1]):
        value = other.value if isinstance(other, ast.Constant) else None
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        name, dim = _shape_read(read, names)
        raises = isinstance(compare.ops[0], ast.NotEq)  # from `if ...: raise`
        reason = f"forward {'raises where' if raises else 'requires'} {ast.unparse(compare)}"
        if name is not None and dim is None:
            facts.append((name, Contract(rank=value, reasons=(reason,))))
        elif name is not None and dim is not None:
            facts.append((name, Contract(sizes=((dim, value),), reasons=(reason,))))
    return facts


def _shape_read(node: ast.AST, names: set[str]) -> tuple[str | None, int | None]:
    """(parameter, dim) for `x.shape[dim]` or `x.size(dim)`; (parameter, None) for its rank
    (`x.dim()`, `x.ndim`, `len(x.shape)`); (None, None) for anything else."""
    owner: ast.AST | None = None
    dim: int | None = None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
        if node.value.attr == "shape":
            owner, dim = node.value.value, _int_of(node.slice)
            if dim is None:
                return None, None
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in ("dim", "ndimension"):
            owner = node.func.value
        elif node.func.attr == "size" and len(node.args) == 1:
            owner, dim = node.func.value, _int_of(node.args[0])
            if dim is None:
                return None, None
    elif isinstance(node, ast.Attribute) and node.attr == "ndim":
        owner = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
        inner = node.args[0] if node.args else None
        if isinstance(inner, ast.Attribute) and inner.attr == "shape":
            owner = inner.value
    if isinstance(owner, ast.Name) and owner.id in names:
        return owner.id, dim
    return None, None


def _int_of(node: ast.AST) -> int | None:
    """The int a literal such as `2` or `-1` is; None for anything else (`-n`, `i + 1`)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _applied(target: Target, forward: Any, parameters: list[str]) -> dict[str, Contract]:
    """The structure the ops forward applies ask of the parameters they are applied to,
    directly or through an assignment (`S = A + A.mT; torch.linalg.cholesky(S)`)."""
    node = parsed_function(forward)
    if node is None:
        return {}
    names = set(parameters)
    sources = _assigned_from(node)
    found: dict[str, Contract] = {}
    for child in own_nodes(node):
        if not isinstance(child, ast.Call) or called_name(child) not in STRUCTURE_OPS:
            continue
        op = called_name(child)
        position, structure = STRUCTURE_OPS[op]
        operand = _operand(child, position)
        if operand is None:
            continue
        structure = structure or _triangle(child, op)
        for name in sorted(_reaching(operand, sources) & names):
            said = Contract(structure=structure, reasons=(f"forward applies {op} to it",))
            found.setdefault(name, said)
    return found


def _operand(call: ast.Call, position: int) -> ast.AST | None:
    """The argument at `position` as torch.* writes it; as a method (`A.cholesky()`), the
    receiver is the first."""
    func = call.func
    if isinstance(func, ast.Attribute) and not is_module(func.value):
        if position == 0:
            return func.value
        position -= 1
    return call.args[position] if position < len(call.args) else None


def _triangle(call: ast.Call, op: str) -> str:
    upper = op in UPPER_BY_DEFAULT
    for keyword in call.keywords:
        if keyword.arg == "upper" and isinstance(keyword.value, ast.Constant):
            upper = bool(keyword.value.value)
    return "upper" if upper else "lower"


def _assigned_from(function: ast.AST) -> dict[str, set[str]]:
    """For each local name assigned once from an expression, the names that expression reads."""
    sources: dict[str, set[str]] = {}
    for child in own_nodes(function):  # type: ignore[arg-type]
        if (
            isinstance(child, ast.Assign)
            and len(child.targets) == 1
            and isinstance(child.targets[0], ast.Name)
            and _keeps_structure(child.value)
        ):
            read = {inner.id for inner in ast.walk(child.value) if isinstance(inner, ast.Name)}
            sources.setdefault(child.targets[0].id, set()).update(read)
    return sources


def _keeps_structure(value: ast.AST) -> bool:
    """An assignment that passes its operands' structure on: not through an op of
    STRUCTURE_OPS (`factor = cholesky(S)` asks S, not `factor`, to be SPD)."""
    calls = (inner for inner in ast.walk(value) if isinstance(inner, ast.Call))
    return not any(called_name(call) in STRUCTURE_OPS for call in calls)


def _reaching(operand: ast.AST, sources: dict[str, set[str]]) -> set[str]:
    """The names `operand` reads, and the names those were assigned from (three steps)."""
    reached = {inner.id for inner in ast.walk(operand) if isinstance(inner, ast.Name)}
    for _ in range(3):
        reached |= {name for local in list(reached) for name in sources.get(local, ())}
    return reached
