"""Inputs inferred from forward's signature and from trying them: the one inference behind
zero-config `check`, its suggested spec, and `init` (gradverify.inference.spec_text writes the
spec's text).

Each parameter gets a kind from what costs nothing first (a default, an annotation, a
conventional name: gradverify.inference.rules.plans), then from probes: one forward and one
backward on tiny float64 inputs (gradverify.inference.search.guesses). Candidates are tried in
order (a tensor of the first argument's shape, a 0-d tensor, a number, Linear-like shapes)
and the first assignment with which forward and backward run and every gradient is
well-formed is kept. A parameter whose gradient backward leaves None, and which forward
accepts as a number, is taken for a number. More cases follow (gradverify.inference.cases).

Importing this module never imports torch; `infer` does.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gradverify.inference.cases import widened
from gradverify.inference.choice import (
    LITERAL,
    NUMBER,
    POSITIVE,
    TENSOR,
    Choice,
    Inference,
    as_complex,
    in_domain,
    is_float_tensor,
)
from gradverify.inference.random_backward import random_backward
from gradverify.inference.reading.intent import said
from gradverify.inference.reading.source import source_facts
from gradverify.inference.rules.plans import as_indices, choices_for, layouts_for, plans_of
from gradverify.inference.rules.shapes import each_rank
from gradverify.inference.search.emptied import Preference
from gradverify.inference.search.guesses import Search
from gradverify.inference.search.precision import in_kernel_precision
from gradverify.inference.search.probe import NO_TENSOR, probe
from gradverify.inference.search.reach import fitted
from gradverify.inference.surrogates import in_contract, passed_through, surrogate_in_code

if TYPE_CHECKING:
    from gradverify.target.loaded import Target

# An error that asks for values in a range, not for another shape.
_RANGE_ERROR = re.compile(r">=\s*0\b.*<=\s*1\b|between 0 and 1|in \[0, ?1\]|probabilit", re.I)
UNIT = (0.05, 0.95)  # values a probability takes, tried where forward asks for them

__all__ = ["LITERAL", "NUMBER", "TENSOR", "Choice", "Inference", "infer"]


def infer(target: Target) -> Inference:
    """Choose inputs for `target` by its signature and by probing forward and backward:
    one base case, then more cases that reach other paths (gradverify.inference.cases).
    What the user's code warns on the guesses (`x.T` of a vector) is no one's business: the
    checks run on what is chosen, and warn there if they should."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _inferred(target)


def _inferred(target: Target) -> Inference:
    base = _base(target)
    if base.rejection is not None:  # a kernel that refuses float64 or CPU tensors?
        return in_kernel_precision(target, base, lambda: _inferred(target), _forward_runs)
    if not base.ran:  # the checks show what backward does wrong; the docstring's word holds
        return replace(base, surrogate=said(target))
    extra = widened(target, base.choices)
    if passed_through(target):  # a grad_output handed on as it is: inputs shaped like the output
        extra = in_contract(target, extra)
    # the words around it (RoundSTE, a natural gradient), a parameter only backward reads;
    # what forward's construction says is judged where the checks run (engine.intent)
    surrogate = surrogate_in_code(target)
    if surrogate:
        return replace(base, extra=extra, surrogate=surrogate)
    # random numbers drawn in backward: a stochastic estimator, judged by a mean of runs
    drawn = random_backward(target, [base.choices, *(choices for _, choices in extra)])
    return replace(base, extra=extra, random_backward=drawn)


def _refused_range(error: str | None) -> bool:
    """Whether forward's error says its values must lie in a range (`p_in >= 0 && p_in <= 1`,
    `between 0 and 1`): a probability, tried on (0, 1) before any guess at shapes."""
    return error is not None and bool(_RANGE_ERROR.search(error))


def _forward_runs(target: Target, choices: Sequence[Choice]) -> bool:
    return probe(target, choices).stage != "forward"


def _base(target: Target) -> Inference:
    """The first assignment with which forward and backward run well, and no slice comes
    out empty where one is found (gradverify.inference.search.emptied)."""
    plans = plans_of(target)
    search = Search(target)
    # a guess on which a slice came out empty is kept only where nothing better is found
    preference = Preference(
        lambda guess: search.settle(fitted(target, guess), plans), search.emptied
    )
    layouts = layouts_for(plans)
    for low, high in ((-1.0, 1.0), POSITIVE, UNIT):
        for layout in layouts:
            choices = fitted(target, in_domain(choices_for(plans, layout), low, high))
            found = preference.kept(search.settle(choices, plans))
            if found is not None:
                return Inference(target.spec, tuple(found), target.variadic)
        if not (search.not_finite or _refused_range(search.first_error)):
            break
    indexed = as_indices(plans, search.first_error)  # `segment_ids` where forward asked
    if indexed != plans:
        plans, layouts = indexed, layouts_for(indexed)
        for layout in layouts:
            choices = fitted(target, in_domain(choices_for(plans, layout), -1.0, 1.0))
            found = preference.kept(search.settle(choices, plans))
            if found is not None:
                return Inference(target.spec, tuple(found), target.variadic)
    if search.forward_ran is None and source_facts(target).complex:
        # forward takes complex numbers apart (`z.imag`, `view_as_real`): perhaps only them
        for layout in layouts:
            choices = as_complex(fitted(target, in_domain(choices_for(plans, layout), -1, 1)))
            found = preference.kept(search.settle(choices, plans))
            if found is not None:
                return Inference(target.spec, tuple(found), target.variadic)
    for choices in each_rank(target, plans):  # each tensor on its own at ranks 1 to 4
        found = preference.kept(search.settle(fitted(target, in_domain(choices, -1.0, 1.0)), plans))
        if found is not None:
            return Inference(target.spec, tuple(found), target.variadic)
    found = preference.rescued(search.emptied_failure)  # failed where a slice came out empty
    if found is not None:
        return Inference(target.spec, tuple(found), target.variadic)
    if preference.fallback is not None:  # a slice came out empty on every guess that ran
        return Inference(target.spec, tuple(preference.fallback), target.variadic)
    if search.forward_ran is not None:  # the checks will show what backward does wrong
        return Inference(target.spec, tuple(search.forward_ran), target.variadic, ran=False)
    unknown = "forward rejected every shape tried: choose its shape"
    if search.first_error and search.first_error.startswith(("backward raised", NO_TENSOR)):
        unknown = "no guess fitted the Function's contract: choose what it takes"
    guesses = [
        replace(choice, reason=unknown) if is_float_tensor(choice) else choice
        for choice in fitted(target, in_domain(choices_for(plans, layouts[0]), -1.0, 1.0))
    ]
    return Inference(target.spec, tuple(guesses), target.variadic, False, search.first_error)
