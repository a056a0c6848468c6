"""Draws aimed at a branch of backward that the case's own draw left unrun.

The `if` (or `while`) test at the start of an unrun arc is read with ast: each comparison
between a literal number and an expression rooted at a name (`ctx.scale > 10`,
`x.min() < -3`, `abs(t) >= 2`) gives a goal, the side of the literal the branch needs. The
name is mapped to one of forward's arguments: a parameter of that name, an attribute forward
sets from a parameter (`ctx.scale = scale`), or a tensor read back from `ctx.saved_tensors`
at the position forward saved it. An aimed draw puts that argument on the needed side: a
number beyond the literal; a tensor with some (or, every other draw, all) of its elements
there, within its declared low/high. Where no goal is found, or none fits the domain, the
generic draws most likely to flip a comparison come first instead: both signs and edge
values, with other numbers.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

from gradverify.engine.branch_coverage import source_tree
from gradverify.engine.explore.draws import (
    EDGES,
    SEED,
    SIGNS,
    TIES,
    Draw,
    explorable,
    interior,
    varied,
)
from gradverify.engine.explore.numbers import number_indices, other_numbers
from gradverify.inputs import KINK_MARGIN_EPS, build_inputs
from gradverify.numerics import seeded
from gradverify.results import Branches
from gradverify.spec.models import Case, FunctionSpec, LiteralInput, TensorInput
from gradverify.target.loaded import Target

Arc = tuple[int, int]
AIMED = "aimed at line"
# The generic order where no goal is read: the draws most likely to flip a comparison first.
GENERIC = (SIGNS, EDGES, SEED, TIES)
ABOVE, BELOW = "above", "below"


@dataclass(frozen=True)
class Goal:
    """Argument `index` wanted on `side` of `literal`."""

    index: int
    side: str
    literal: float


@dataclass(frozen=True)
class Unrun:
    """One unrun arc of backward, the line it leads to, and the goals that reach it."""

    arc: Arc
    line: int
    goals: tuple[Goal, ...]


def unrun_arcs(target: Target, case: Case, branches: Branches | None) -> list[Unrun]:
    """The arcs `branches` left unrun that a draw could reach, each with its goals (none:
    the generic draws); a test on `ctx.needs_input_grad` is left to the layouts check."""
    if branches is None or target.source_file is None:
        return []
    unrun = [arc for arc in branches.possible if arc not in branches.taken]
    if not unrun:
        return []
    tests, names = _read(target.source_file, branches.line)
    found = []
    for start, to in unrun:
        test = tests.get(start)
        if test is None or "needs_input_grad" in ast.dump(test[0]):
            continue
        condition, body = test
        wanted = to == body  # into the body: the test true; elsewhere: false
        goals = tuple(
            goal
            for name, side, literal in _comparisons(condition, wanted)
            for goal in _goal(target, case, names.get(name, name), side, literal)
        )
        line = to if to > 0 else start
        found.append(Unrun((start, to), line, goals))
    return found


def aimed_draws(
    case: Case, spec: FunctionSpec, seed: int, unrun: Sequence[Unrun], count: int
) -> Iterator[tuple[Unrun, Draw]]:
    """Up to `count` draws, each aimed at one of `unrun` in turn (with its goals, or the
    generic order where it has none)."""
    margin = KINK_MARGIN_EPS * spec.tolerance.eps
    numbers = bool(number_indices(case))
    for number in range(1, count + 1):
        if not unrun:  # the caller drops an arc once a draw has run it
            return
        target = unrun[(number - 1) % len(unrun)]
        draw_seed = (seed * 1_000_037 + 104_729 * number) % (2**63)
        generator = seeded.generator(draw_seed)
        every = number % 2 == 0  # every element beyond the literal, or about half of them
        kind = "" if target.goals else GENERIC[(number - 1) % len(GENERIC)]
        other = numbers and (every or bool(kind))  # the generic draws always vary numbers
        drawn = _with_numbers(other_numbers(case, generator) if other else case, target.goals)
        arguments = list(build_inputs(drawn, draw_seed, spec.kinks, margin))
        for index, item in enumerate(drawn.inputs):
            if not explorable(item):
                continue
            goals = [goal for goal in target.goals if goal.index == index]
            if goals:
                arguments[index] = _beyond(item, arguments[index], goals, every, margin, generator)
            elif kind in (EDGES, TIES, SIGNS):
                arguments[index] = varied(kind, item, arguments[index], margin, generator)
        label = f"{AIMED} {target.line}" + (f", {kind}" if kind else "")
        yield target, Draw(number, label, drawn, tuple(arguments), drawn != case)


def _with_numbers(case: Case, goals: Sequence[Goal]) -> Case:
    """`case` with each number a goal names put beyond its literal."""
    inputs: list[Any] = list(case.inputs)
    for goal in goals:
        if goal.index not in number_indices(case):
            continue
        item = inputs[goal.index]
        value = item.value if isinstance(item, LiteralInput) else item
        if isinstance(value, bool):
            other: Any = goal.side == ABOVE  # `if flag > 0`: True above
        elif isinstance(value, int):
            other = (
                math.floor(goal.literal) + 1 if goal.side == ABOVE else math.ceil(goal.literal) - 1
            )
        else:
            step = max(1.0, abs(goal.literal))
            other = goal.literal + step if goal.side == ABOVE else goal.literal - step
        inputs[goal.index] = LiteralInput(value=other) if isinstance(item, LiteralInput) else other
    return case.model_copy(update={"inputs": inputs})


def _beyond(
    item: TensorInput,
    tensor: torch.Tensor,
    goals: Sequence[Goal],
    every: bool,
    margin: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """`tensor` with some (or all) elements beyond each goal's literal, within low/high."""
    values = tensor.detach().to(device="cpu", dtype=torch.float64).flatten()
    if values.numel() == 0:
        return tensor
    low, high = interior(item, margin)
    for goal in goals:
        lo, hi = (
            (max(low, goal.literal), high) if goal.side == ABOVE else (low, min(high, goal.literal))
        )
        if hi <= lo:
            continue  # outside the declared domain: left as drawn
        uniform = torch.rand(values.shape, generator=generator, dtype=torch.float64, device="cpu")
        beyond = lo + (hi - lo) * (0.1 + 0.8 * uniform)
        if not item.is_differentiable_dtype:
            beyond = beyond.round().clamp(lo, hi)
        chosen = torch.ones_like(values, dtype=torch.bool)
        if not every:
            chosen = torch.rand(values.shape, generator=generator, device="cpu") < 0.5
            chosen[0] = True
        values = torch.where(chosen, beyond, values)
    result = values.reshape(tensor.shape).to(tensor.dtype).to(tensor.device)
    return result.requires_grad_(tensor.requires_grad)


def _goal(target: Target, case: Case, name: str, side: str, literal: float) -> list[Goal]:
    for index in range(len(case.inputs)):
        if target.argument_name(index) == name:
            return [Goal(index, side, literal)]
    return []


def _comparisons(test: ast.expr, wanted: bool) -> Iterator[tuple[str, str, float]]:
    """(root name, side, literal) for each comparison of `test` with a literal number, the
    side it needs for `test` to be `wanted`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _comparisons(test.operand, not wanted)
    elif isinstance(test, ast.BoolOp):
        for value in test.values:
            yield from _comparisons(value, wanted)
    elif isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right, op = test.left, test.comparators[0], test.ops[0]
        if isinstance(op, ast.Gt | ast.GtE):
            above = True
        elif isinstance(op, ast.Lt | ast.LtE):
            above = False
        else:
            return
        literal, other = _literal(right), left
        if literal is None:
            literal, other, above = _literal(left), right, not above
        name = _root(other)
        if literal is not None and name is not None:
            yield name, ABOVE if above == wanted else BELOW, literal
    elif isinstance(test, ast.Call):  # (x > 3).any(), torch.any(x < 0)
        for inner in (test.func, *test.args):
            yield from _comparisons(inner, wanted)
    elif isinstance(test, ast.Attribute):
        yield from _comparisons(test.value, wanted)


def _literal(node: ast.expr) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _literal(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return None if isinstance(node.value, bool) else float(node.value)
    return None


def _root(node: ast.expr) -> str | None:
    """The name an expression reads (`x` of x.min(), `scale` of ctx.scale, `t` of abs(t))."""
    while True:
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "ctx":
                return f"ctx.{node.attr}"
            node = node.value
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                node = node.func.value
            elif len(node.args) == 1:
                node = node.args[0]
            else:
                return None
        elif isinstance(node, ast.Subscript | ast.Starred):
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


@lru_cache(maxsize=64)
def _read(file: str, def_line: int) -> tuple[dict[int, tuple[ast.expr, int]], dict[str, str]]:
    """The `if`/`while` tests of the backward defined at `def_line` by line, with their body's
    first line; and the names backward reads that stand for forward's parameters."""
    try:
        _, tree = source_tree(file)
    except (OSError, SyntaxError, ValueError):
        return {}, {}
    for owner in ast.walk(tree):
        if not isinstance(owner, ast.ClassDef):
            continue
        methods = {node.name: node for node in owner.body if isinstance(node, ast.FunctionDef)}
        backward = methods.get("backward")
        if backward is None or def_line not in (
            backward.lineno,
            *(d.lineno for d in backward.decorator_list),
        ):
            continue
        tests = {
            node.lineno: (node.test, node.body[0].lineno)
            for node in ast.walk(backward)
            if isinstance(node, ast.If | ast.While)
        }
        forward = methods.get("forward")
        return tests, _names(forward, backward) if forward is not None else {}
    return {}, {}


def _names(forward: ast.FunctionDef, backward: ast.FunctionDef) -> dict[str, str]:
    """backward's names for forward's parameters: `ctx.scale` set from `scale`, and the names
    unpacked from ctx.saved_tensors at the positions forward saved parameters."""
    parameters = {argument.arg for argument in forward.args.args[1:]}
    names: dict[str, str] = {}
    saved: list[str | None] = []
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "ctx"
                    and node.value.id in parameters
                ):
                    names[f"ctx.{target.attr}"] = node.value.id
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "save_for_backward"
        ):
            saved = [
                a.id if isinstance(a, ast.Name) and a.id in parameters else None for a in node.args
            ]
    for node in ast.walk(backward):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "saved_tensors"
        ):
            for target in node.targets:
                elements = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
                for position, element in enumerate(elements):
                    if isinstance(element, ast.Name) and position < len(saved):
                        parameter = saved[position]
                        if parameter is not None:
                            names[element.id] = parameter
    return names
