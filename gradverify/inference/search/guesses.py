"""The search for a base case: probe one assignment after another, repairing it where
forward or backward complain (a number for a tensor, a 0-d tensor, another shape), and
remember the fallbacks.

Importing this module never imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gradverify.inference.choice import CALLABLE, NUMBER, TENSOR, Choice, with_choice
from gradverify.inference.rules.plans import CALLABLES, ELEMENTWISE, LISTED, NUMBERS, Plan
from gradverify.inference.search.probe import NOT_FINITE, STAGES, ProbeOutcome, probe

if TYPE_CHECKING:
    from gradverify.target.loaded import Target


class Search:
    """Probes one assignment after another; remembers the fallbacks."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.forward_ran: list[Choice] | None = None
        self.first_error: str | None = None
        self.not_finite = False  # forward gave NaN or Inf somewhere: try a positive domain
        self.probes = 0
        # what came out empty on each assignment probed that ran through (by its inputs)
        self.emptied_on: dict[tuple[str, ...], str | None] = {}
        self.emptied_failure: list[Choice] | None = None  # the first failed where one did

    def settle(self, choices: list[Choice], plans: Sequence[Plan]) -> list[Choice] | None:
        """`choices`, or a neighbour of it, that forward and backward run on well; else None."""
        outcome = self._probe(choices)
        # Perhaps a parameter is a number (or a tensor) after all, or a 0-d tensor.
        repairs = (
            _flipped(choices, plans),
            _zero_dimensional(choices, outcome),
            # another function where the guessed one was called another way (`func(t, y)`),
            # then with scalars too (`event_fn(t, y)` gives the 0-d value vjp asks for)
            *_callable_repairs(choices, outcome),
        )
        for repair in repairs:
            if (outcome.stage == "done" and not outcome.misfit) or repair == choices:
                continue
            tried = self._probe(repair)
            if _progress(tried) > _progress(outcome):
                choices, outcome = repair, tried
        if outcome.stage == "forward" or outcome.misfit or outcome.size_error:
            # a misfit, or sizes backward cannot combine on guessed shapes: the guess breaks
            # the Function's contract, not a finding (another guess may fit)
            return None
        if outcome.wrong_shape:
            choices, outcome = self._reshape(choices, plans, outcome)
        if outcome.wrong_shape:
            choices, outcome = self._fewer_dims(choices, outcome)
        if outcome.wrong_shape:
            choices, outcome = self._broadcast(choices, outcome)
        guessed = [c.name for i, c in enumerate(choices) if i in outcome.wrong_shape and
                   c.kind == NUMBER and plans[i].flexible]  # fmt: skip
        if guessed:  # a number inference chose, where backward returns a tensor gradient
            self.first_error = self.first_error or (
                f"backward returns a tensor gradient for {', '.join(guessed)}, guessed a number"
            )
            return None  # a failed guess, never a finding
        self.forward_ran = self.forward_ran or choices
        if outcome.stage == "backward" or outcome.wrong_shape:
            return None
        return self._numbers_for_none(choices, plans, outcome.none)

    def _reshape(
        self, choices: list[Choice], plans: Sequence[Plan], outcome: ProbeOutcome
    ) -> tuple[list[Choice], ProbeOutcome]:
        """Arguments whose gradient has another shape: a 0-d tensor, then a number; a number
        inference chose whose gradient backward returns as a tensor: a 0-d tensor. Again
        while a repair leaves another argument's gradient misfitting (radius 0-d, then the
        centre it was broadcast with)."""
        tried_at: set[int] = set()
        while True:
            todo = [i for i in outcome.wrong_shape if i > 0 and i not in tried_at]
            if not todo:  # the first argument sets the shapes: its gradient is backward's to fit
                return choices, outcome
            index = todo[0]
            tried_at.add(index)
            for alternative in _reshaped(choices[index], plans[index]):
                trial = with_choice(choices, index, alternative)
                tried = self._probe(trial)
                if tried.stage == "done" and index not in tried.wrong_shape:
                    choices, outcome = trial, tried
                    break

    def _fewer_dims(
        self, choices: list[Choice], outcome: ProbeOutcome
    ) -> tuple[list[Choice], ProbeOutcome]:
        """Gradients that misfit still: perhaps one tensor has a dim too many and broadcast
        the others' gradients (`inducing_values` [3, 3] where forward takes a vector [M] and
        unsqueezes it): each tensor from the last, its leading dim dropped, until backward
        fits every gradient."""
        for index in reversed(range(len(choices))):
            choice = choices[index]
            if choice.kind != TENSOR or len(choice.shape) < 2 or choice.dtype != "float64":
                continue
            trial = with_choice(choices, index, replace(choice, shape=choice.shape[1:]))
            tried = self._probe(trial)
            if tried.stage == "done" and not tried.wrong_shape and not tried.misfit:
                return trial, tried
        return choices, outcome

    def _broadcast(
        self, choices: list[Choice], outcome: ProbeOutcome
    ) -> tuple[list[Choice], ProbeOutcome]:
        """Gradients that misfit still, each smaller than its argument and broadcasting to
        it (`loc` guessed [2, 3, 3], its gradient [3]): perhaps forward broadcasts the
        argument and backward reduces its gradient, as it should. Each such argument at its
        gradient's shape is kept where backward then fits every gradient and forward's
        outputs are as before and larger than it: the guess was a shape forward broadcasts,
        not a finding. A backward that forgets to expand a reduction (`x [4]` given a 0-d
        gradient) changes forward's output at the smaller shape, and stays a finding."""
        for index, shape in outcome.gradient_shapes:
            choice = choices[index]
            if choice.kind != TENSOR or not _broadcasts_to(shape, choice.shape):
                continue
            reason = f"forward broadcasts it; backward's gradient is {list(shape)}"
            given = replace(choice, shape=shape, reason=reason)
            trial = with_choice(choices, index, given)
            tried = self._probe(trial)
            if (
                tried.stage == "done"
                and not tried.wrong_shape
                and not tried.misfit
                and tried.outputs == outcome.outputs
                and any(_broadcasts_to(shape, out) for out in tried.outputs)
            ):
                return trial, tried
        return choices, outcome

    def _numbers_for_none(
        self, choices: list[Choice], plans: Sequence[Plan], none: Sequence[int]
    ) -> list[Choice]:
        """A tensor whose gradient backward leaves None is a number, if forward takes one:
        all of them at once first (`clamp(x, -qn, qp)` takes two numbers, not a number and a
        tensor), then one at a time."""
        reason = "backward returns None for it, and forward takes a number"
        flexible = [i for i in none if plans[i].flexible and choices[i].kind == TENSOR]
        if len(flexible) > 1:
            for value in NUMBERS:
                trial = [
                    Choice(c.name, NUMBER, value=value, reason=reason) if i in flexible else c
                    for i, c in enumerate(choices)
                ]
                tried = self._probe(trial)
                if tried.stage == "done" and not tried.wrong_shape:
                    return trial
        for index in flexible:
            listed = Choice(choices[index].name, NUMBER, value=NUMBERS, reason=LISTED)
            for alternative in [*_numbers(choices[index], reason), listed]:
                trial = with_choice(choices, index, alternative)
                tried = self._probe(trial)
                if tried.stage == "done" and not tried.wrong_shape:
                    choices = trial
                    break
        return choices

    def _probe(self, choices: Sequence[Choice]) -> ProbeOutcome:
        self.probes += 1
        outcome = probe(self.target, choices)
        failed = outcome.stage == "forward" or outcome.misfit or outcome.size_error
        if failed and self.first_error is None:
            self.first_error = outcome.error
        self.not_finite = self.not_finite or outcome.error == NOT_FINITE
        self.emptied_on[_key(choices)] = outcome.emptied
        if outcome.emptied is not None and (failed or outcome.stage != "done"):
            self.emptied_failure = self.emptied_failure or list(choices)
        return outcome

    def emptied(self, choices: Sequence[Choice]) -> str | None:
        """The slice that came out empty when `choices` were probed (None: none did)."""
        return self.emptied_on.get(_key(choices))


def _key(choices: Sequence[Choice]) -> tuple[str, ...]:
    return tuple(repr(choice) for choice in choices)


def _broadcasts_to(small: tuple[int, ...], large: tuple[int, ...]) -> bool:
    """Whether `small`, of fewer elements than `large`, broadcasts to it."""
    if small == large or len(small) > len(large) or _size(small) >= _size(large):
        return False
    return all(s in (1, t) for s, t in zip(reversed(small), reversed(large), strict=False))


def _size(shape: tuple[int, ...]) -> int:
    size = 1
    for extent in shape:
        size *= extent
    return size


def _flipped(choices: list[Choice], plans: Sequence[Plan]) -> list[Choice]:
    """The flexible parameters as the other kind: tensors as numbers, numbers as tensors."""
    flipped = []
    for choice, plan in zip(choices, plans, strict=True):
        if not plan.flexible:
            flipped.append(choice)
        elif choice.kind == TENSOR:
            flipped.append(_numbers(choice, "forward uses it as one")[0])
        else:
            shape = choices[0].shape if choices and choices[0].kind == TENSOR else ELEMENTWISE
            flipped.append(Choice(choice.name, TENSOR, shape, reason="forward rejects a number"))
    return flipped


def _progress(outcome: ProbeOutcome) -> int:
    """How far a probe got: a later stage, and at one stage no misfit, is further."""
    return 2 * STAGES.index(outcome.stage) + (not outcome.misfit)


def _callable_repairs(choices: list[Choice], outcome: ProbeOutcome) -> list[list[Choice]]:
    """Each other of CALLABLES for the guessed functions, then with scalars too."""
    if not any(c.kind == CALLABLE and c.value in CALLABLES for c in choices):
        return []
    others = [_other_callables(choices, value) for value in CALLABLES[1:]]
    return [*others, *(_zero_dimensional(other, outcome) for other in others)]


def _other_callables(choices: list[Choice], value: str) -> list[Choice]:
    """The functions given to parameters that take one as `value`, another of CALLABLES
    (`func(t, y)` takes two arguments where torch.sin takes one)."""
    return [
        replace(c, value=value) if c.kind == CALLABLE and c.value in CALLABLES else c
        for c in choices
    ]


def _zero_dimensional(choices: list[Choice], outcome: ProbeOutcome) -> list[Choice]:
    """The tensors after the first as 0-d tensors (a scalar parameter such as Swish's beta)."""
    return [
        replace(choice, shape=(), reason=_at_shape(outcome, choice))
        if index > 0 and choice.kind == TENSOR and choice.shape
        else choice
        for index, choice in enumerate(choices)
    ]


def _at_shape(outcome: ProbeOutcome, choice: Choice) -> str:
    """Why a tensor became 0-d, in what the probe saw: its own shape, beside the others."""
    if outcome.stage == "done":
        return f"the guess {list(choice.shape)} broke the Function's contract"
    return f"{outcome.stage} raised with it at {list(choice.shape)}"


def _reshaped(choice: Choice, plan: Plan) -> list[Choice]:
    """What to try for an argument whose gradient misfits: a 0-d tensor (for a number too:
    backward's tensor gradient says it is one), then a number where the plan allows."""
    if choice.kind == NUMBER:
        return [Choice(choice.name, TENSOR, (), reason="backward returns a tensor gradient for it")]
    alternatives = [replace(choice, shape=(), reason="backward's gradient is 0-d")]
    if plan.flexible:
        alternatives += _numbers(choice, "backward's gradient does not fit a tensor")
    return alternatives


def _numbers(choice: Choice, reason: str) -> list[Choice]:
    return [Choice(choice.name, NUMBER, value=value, reason=reason) for value in NUMBERS]
