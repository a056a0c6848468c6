"""An order the code states between two parameters (`lo < hi`), and inputs that keep it.

Read without running the code, from:

- the docstrings of the Function and of its methods: `lo < hi`, `low <= high`, the ends of
  a chain (`lo <= x <= hi`: lo <= hi; where x lies is no order between parameters),
  `lower must be less than upper`, `upper greater than lower`; never where a clause states a
  condition (`where x < lo`, `wherever x > clip_val`, `for a > b`): a region, not a contract;
- forward's asserts: `assert (lo < hi).all()`, `assert low < high`, `torch.all(lo < hi)`,
  `assert (hi - lo > 0).all()`, `assert lo.lt(hi).all()`, `torch._assert((lo < hi).all(), ...)`;
- forward's raises: `if (lo >= hi).any(): raise ValueError(...)`, `if not (lo < hi).all(): raise`.

Inference draws an ordered pair of float tensors from disjoint ranges that keep the order
(lo in [-1, -0.1], hi in [0.1, 1]), gives an ordered pair of numbers distinct values in the
order, and drops a case that breaks it: a guess that breaks the Function's contract is a
failed guess, not a finding. An explored draw whose numbers break it is a failed draw
(gradverify.engine.explore.search).

Importing this module never imports torch.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gradverify.inference.choice import LITERAL, NUMBER, Choice, is_float_tensor
from gradverify.inference.reading.docstrings import docstrings
from gradverify.target.syntax import called_name, own_nodes, parsed_function

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

# The operators of an order, and the same order read the other way round.
LESS, GREATER = ("<", "<=", "≤"), (">", ">=", "≥")
LESS_WORDS = r"less|smaller|lower|below"
GREATER_WORDS = r"greater|larger|bigger|higher|above"
# A clause that states a condition (a region the values may fall in), not a requirement.
CONDITION_BEFORE = re.compile(
    r"\b(where\w*|when\w*|if|unless|for|once|while|outside|inside)\b[^.;:,]*$", re.I
)
# The share of an ordered pair's common range left between the two (lo in [-1, -0.1],
# hi in [0.1, 1] from [-1, 1]): the pair's elements never come close to equal.
GAP = 0.05
NEGATED: dict[type, type] = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt}
# Comparisons written as calls: `lo.lt(hi)`, `torch.less_equal(lo, hi)`.
METHODS: dict[str, type] = {
    "lt": ast.Lt, "less": ast.Lt, "le": ast.LtE, "less_equal": ast.LtE,
    "gt": ast.Gt, "greater": ast.Gt, "ge": ast.GtE, "greater_equal": ast.GtE,
}  # fmt: skip


@dataclass(frozen=True)
class Order:
    """`lower` < `upper` (or <=), as `source` says."""

    lower: str
    upper: str
    source: str  # "the docstring says", "forward asserts", "forward raises otherwise"

    @property
    def reason(self) -> str:
        return f"{self.lower} < {self.upper}, as {self.source}"


def read_orders(target: Target) -> tuple[Order, ...]:
    """The orders the Function's docstrings and forward state between its parameters; a
    pair stated both ways round (a confused docstring) is left out."""
    if target.op is not None or not target.is_function:
        return ()
    forward = getattr(target.obj, "forward", None)
    backward = getattr(target.obj, "backward", None)
    try:
        return _cached_orders(target.obj, forward, backward, tuple(target.parameters))
    except TypeError:  # an unhashable class or method
        return _orders(target.obj, forward, backward, tuple(target.parameters))


@functools.lru_cache(maxsize=64)
def _cached_orders(
    function_class: Any, forward: Any, backward: Any, parameters: tuple[str, ...]
) -> tuple[Order, ...]:
    return _orders(function_class, forward, backward, parameters)


def _orders(
    function_class: Any, forward: Any, backward: Any, parameters: tuple[str, ...]
) -> tuple[Order, ...]:
    texts = docstrings(function_class, forward, backward)
    found = [*_asserted(forward, parameters), *_documented(texts, parameters)]
    pairs = {(order.lower, order.upper) for order in found}
    kept: dict[tuple[str, str], Order] = {}
    for order in found:
        if (order.upper, order.lower) not in pairs:
            kept.setdefault((order.lower, order.upper), order)
    return tuple(kept.values())


def _documented(texts: Sequence[str], parameters: Sequence[str]) -> Iterator[Order]:
    names = "|".join(re.escape(name) for name in sorted(parameters, key=len, reverse=True))
    if not names:
        return
    operator = re.compile(rf"\b({names})\s*(<=?|>=?|≤|≥)\s*(?=({names})\b(?!\s*\())")
    worded = re.compile(
        rf"\b({names})\s+(?:(?:must|should|has to|needs to)\s+be\s+|is\s+|are\s+)?"
        rf"(?:strictly\s+)?({LESS_WORDS}|{GREATER_WORDS})\s+than\s+(?:or\s+equal\s+to\s+)?"
        rf"({names})\b"
    )
    for text in texts:
        for chain in _chains(operator.finditer(text)):
            if CONDITION_BEFORE.search(text[max(0, chain[0].start() - 40) : chain[0].start()]):
                continue
            directions = {said.group(2) in LESS for said in chain}
            first, last = chain[0].group(1), chain[-1].group(3)
            if len(directions) == 1 and first != last:
                # `lo <= x <= hi` says where x lies; of a chain only its ends are an order
                yield _order(first, last, directions.pop(), "the docstring says")
        for said in worded.finditer(text):
            if CONDITION_BEFORE.search(text[max(0, said.start() - 40) : said.start()]):
                continue
            first, words, second = said.groups()
            less = re.fullmatch(LESS_WORDS, words) is not None
            if first != second:
                yield _order(first, second, less, "the docstring says")


def _chains(found: Iterator[re.Match[str]]) -> Iterator[list[re.Match[str]]]:
    """Comparisons that follow on from each other (`lo <= x` then `x <= hi`) as one chain."""
    chain: list[re.Match[str]] = []
    for said in found:
        if chain and said.start(1) != chain[-1].start(3):
            yield chain
            chain = []
        chain.append(said)
    if chain:
        yield chain


def _order(first: str, second: str, less: bool, source: str) -> Order:
    return Order(first, second, source) if less else Order(second, first, source)


def _asserted(forward: Any, parameters: Sequence[str]) -> Iterator[Order]:
    """`assert (lo < hi).all()`, `torch._assert(lo < hi, ...)`, and an `if` that raises
    where the order breaks (`if (lo >= hi).any(): raise`)."""
    node = parsed_function(forward)
    if node is None:
        return
    names = set(parameters)
    for child in own_nodes(node):
        if isinstance(child, ast.Assert):
            yield from _compared(child.test, True, names, "forward asserts")
        elif isinstance(child, ast.Call) and called_name(child) in ("_assert", "_assert_async"):
            if child.args:
                yield from _compared(child.args[0], True, names, "forward asserts")
        elif isinstance(child, ast.If) and any(isinstance(s, ast.Raise) for s in child.body):
            yield from _compared(child.test, False, names, "forward raises otherwise")


def _compared(test: ast.AST, holds: bool, names: set[str], source: str) -> Iterator[Order]:
    """The orders between two parameters that `test` requires (`holds`) or forbids."""
    test = _unwrapped(test)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _compared(test.operand, not holds, names, source)
    elif isinstance(test, ast.BoolOp):
        # all of an `and` must hold; none of an `or` that raises may hold
        if isinstance(test.op, ast.And) == holds:
            for value in test.values:
                yield from _compared(value, holds, names, source)
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in NEGATED:
        operands = _operands(test.left, test.comparators[0])
        yield from _pair(operands, type(test.ops[0]), holds, names, source)
    elif isinstance(test, ast.Call) and called_name(test) in METHODS:
        receiver = test.func.value if isinstance(test.func, ast.Attribute) else None
        module = isinstance(receiver, ast.Name) and receiver.id in ("torch", "np", "numpy")
        arguments = test.args if receiver is None or module else [receiver, *test.args]
        if len(arguments) == 2:
            operands = _operands(arguments[0], arguments[1])
            yield from _pair(operands, METHODS[called_name(test)], holds, names, source)


def _operands(left: ast.AST, right: ast.AST) -> tuple[ast.AST, ast.AST]:
    """The two sides compared; `hi - lo > 0` compares hi with lo."""
    left, right = _unwrapped(left), _unwrapped(right)
    zero = isinstance(right, ast.Constant) and right.value == 0
    if zero and isinstance(left, ast.BinOp) and isinstance(left.op, ast.Sub):
        return _unwrapped(left.left), _unwrapped(left.right)
    return left, right


def _pair(
    operands: tuple[ast.AST, ast.AST], op: type, holds: bool, names: set[str], source: str
) -> Iterator[Order]:
    left, right = operands
    if not (isinstance(left, ast.Name) and isinstance(right, ast.Name)):
        return
    if left.id in names and right.id in names and left.id != right.id:
        op = op if holds else NEGATED[op]
        yield _order(left.id, right.id, op in (ast.Lt, ast.LtE), source)


def _unwrapped(node: ast.AST) -> ast.AST:
    """`x` of `(x).all()`, `x.any()`, `torch.all(x)`, `bool(x)`, `x.detach()`, `x.item()`."""
    while isinstance(node, ast.Call):
        name = called_name(node)
        if name not in ("all", "any", "bool", "detach", "item"):
            break
        if isinstance(node.func, ast.Attribute) and not node.args:
            inner: ast.AST = node.func.value
        elif node.args:
            inner = node.args[0]
        else:
            break
        if isinstance(inner, ast.Name) and inner.id in ("torch", "np", "numpy"):
            break
        node = inner
    return node


def ordered(target: Target, choices: Sequence[Choice]) -> list[Choice]:
    """`choices` with each ordered pair's values in its order: two float tensors whose ranges
    overlap drawn from the two ends of their common range with a gap between; two numbers
    inference chose given distinct values in the order. Two tensors whose ranges lie wholly
    the wrong way round are a case's own doing (`kept` drops it)."""
    result = list(choices)
    position = {choice.name: index for index, choice in enumerate(result)}
    for order in read_orders(target):
        if order.lower not in position or order.upper not in position:
            continue
        lower, upper = result[position[order.lower]], result[position[order.upper]]
        if is_float_tensor(lower) and is_float_tensor(upper):
            if lower.high < upper.low or lower.low >= upper.high:
                continue
            low, high = min(lower.low, upper.low), max(lower.high, upper.high)
            middle, gap = (low + high) / 2, (high - low) * GAP
            lower = replace(lower, low=low, high=_round(middle - gap), reason=order.reason)
            upper = replace(upper, low=_round(middle + gap), high=high, reason=order.reason)
        elif _number(lower) and _number(upper) and lower.value >= upper.value:
            low, high = upper.value, lower.value
            low = low - 1 if low == high else low
            lower = replace(lower, value=low, reason=order.reason)
            upper = replace(upper, value=high, reason=order.reason)
        else:
            continue
        result[position[order.lower]], result[position[order.upper]] = lower, upper
    return result


def kept(target: Target, choices: Sequence[Choice]) -> bool:
    """Whether every ordered pair of float tensors or numbers in `choices` keeps its order
    (for tensors: the lower's range lies below the upper's)."""
    by_name = {choice.name: choice for choice in choices}
    for order in read_orders(target):
        lower, upper = by_name.get(order.lower), by_name.get(order.upper)
        if lower is None or upper is None:
            continue
        below, above = _span(lower), _span(upper)
        if below is not None and above is not None and below[1] > above[0]:
            return False
    return True


def numbers_out_of_order(target: Target, numbers: Mapping[int, Any]) -> Order | None:
    """The first order that the numbers at forward's argument positions (`{1: 0.7, 2: 0.6}`)
    break, or None: an explored draw of other numbers that breaks one is a failed draw."""
    by_name = {
        target.parameters[index]: value
        for index, value in numbers.items()
        if index < len(target.parameters) and type(value) in (int, float)
    }
    for order in read_orders(target):
        lower, upper = by_name.get(order.lower), by_name.get(order.upper)
        if lower is not None and upper is not None and lower > upper:
            return order
    return None


def ordered_names(target: Target) -> frozenset[str]:
    """The parameters in an order the code states."""
    return frozenset(name for order in read_orders(target) for name in (order.lower, order.upper))


def _span(choice: Choice) -> tuple[float, float] | None:
    if is_float_tensor(choice):
        return choice.low, choice.high
    if choice.kind in (NUMBER, LITERAL) and type(choice.value) in (int, float):
        return float(choice.value), float(choice.value)
    return None


def _number(choice: Choice) -> bool:
    """A number inference chose (forward's own defaults are left as they are)."""
    return choice.kind == NUMBER and type(choice.value) in (int, float)


def _round(value: float) -> float:
    return round(value, 6)
