"""A case as a real function: complex arguments and outputs as (real, imaginary) pairs, so
that torch's gradcheck and the finite differences see only real numbers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from gradverify.checks.shared.case import CaseContext
from gradverify.numerics.complex_parts import Parts, as_pairs, real_call


@dataclass(frozen=True)
class RealCase:
    """A case as a real function: its context (whose target calls forward on pairs), its
    arguments with every complex one that requires grad as a real [..., 2] leaf, the parts."""

    context: CaseContext
    arguments: tuple[Any, ...]
    parts: Parts


def realify(context: CaseContext, arguments: Sequence[Any], wrt: Sequence[int]) -> RealCase:
    """The case with complex arguments and outputs as (real, imaginary) pairs.

    A case with no complex argument to differentiate keeps its arguments; its outputs are
    still turned into pairs should forward return complex ones.
    """
    columns = frozenset(
        index
        for index in wrt
        if isinstance(arguments[index], torch.Tensor) and arguments[index].is_complex()
    )
    parts = Parts(columns)
    real_arguments = tuple(
        as_pairs(argument) if index in columns else argument
        for index, argument in enumerate(arguments)
    )
    call = real_call(context.target.call, columns, parts.rows)
    real_context = replace(context, target=replace(context.target, call=call))
    return RealCase(real_context, real_arguments, parts)
