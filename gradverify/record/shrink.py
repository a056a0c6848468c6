"""Large recorded shapes made small, so that specs stay fast: a dimension is halved (every
dimension of that size at once, else one alone) and the smaller shape kept when forward
and backward still run well-formed on it (no error, finite outputs, gradients of the
inputs' shapes)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import torch

from gradverify.inputs import build_inputs
from gradverify.record.cases import RecordedCase
from gradverify.spec.models import Case
from gradverify.target.loaded import Target

MAX_ELEMENTS = 4096  # shrink while the case's tensors hold more elements than this
MAX_TRIALS = 48  # forward-and-backward runs one case's shrinking may take
CAP = 64  # the halving paths are tried from their small end up to CAP times the limit
FLOOR = 16  # halving every large dimension together leaves those below this as they are


def shrink(
    target: Target,
    case: RecordedCase,
    limit: int = MAX_ELEMENTS,
    tried: dict[str, bool] | None = None,
) -> RecordedCase:
    """`case` with smaller shapes where forward and backward still run well-formed on them;
    as it was when it is small already or does not run at its recorded shapes. `tried`
    remembers each run's answer by shapes across the cases of one target (a larger recorded
    shape halves into a smaller one's path, not run again); where it answered, the shapes
    found are run once more on this case's own ranges."""
    if _elements(case.inputs) <= limit:
        return case
    if tried is None:
        return _shrunk(target, case, limit, {})
    found = _shrunk(target, case, limit, tried)
    if found is case or runs_well_formed(target, found.inputs):
        return found
    return _shrunk(target, case, limit, {})


def _shrunk(target: Target, case: RecordedCase, limit: int, tried: dict[str, bool]) -> RecordedCase:
    def runs(inputs: list[Any]) -> bool:
        key = repr([_shape_of(item) for item in inputs])
        if key not in tried:
            tried[key] = runs_well_formed(target, inputs)
        return tried[key]

    inputs = _lowest_running(case.inputs, limit, runs)
    if inputs is None:  # nothing small runs: halve from the recorded shapes, as they run
        if not runs(case.inputs):
            return case
        inputs = case.inputs
    trials = 0
    while _elements(inputs) > limit and trials < MAX_TRIALS:
        for candidate in _halvings(inputs):
            trials += 1
            if runs(candidate):
                inputs = candidate
                break
            if trials >= MAX_TRIALS:
                break
        else:
            break  # no dimension can be halved
    return _with_inputs(case, inputs)


def _with_inputs(case: RecordedCase, inputs: list[Any]) -> RecordedCase:
    """`case` with `inputs` in place of its own, each shape it changed remembered."""
    shrunk_from = {
        index: tuple(old["shape"])
        for index, (old, new) in enumerate(zip(case.inputs, inputs, strict=True))
        if isinstance(old, dict) and "shape" in old and old["shape"] != new["shape"]
    }
    return RecordedCase(case.name, case.call, inputs, case.notes, shrunk_from)


def _lowest_running(
    inputs: list[Any], limit: int, runs: Callable[[list[Any]], bool]
) -> list[Any] | None:
    """The smallest point that runs on two halving paths down to `limit`, each tried from
    its small end up (one run on small tensors where a path ends well, where halving from
    the recorded shapes runs at every size on the way down, seconds each for an image): the
    largest size halved alone, and every large dimension of every input halved together
    (`lows` [1024, 1024] beside `highs` [512, 512] halve in step). Points over CAP times
    `limit` are left to the halving that follows; None where no point runs."""
    for step in (_first_halving, _halved_together):
        path: list[list[Any]] = []
        point: list[Any] | None = inputs
        while point is not None and _elements(point) > limit:
            point = step(point)
            if point is not None:
                path.append(point)
        for candidate in reversed(path):
            if _elements(candidate) > CAP * limit:
                break
            if runs(candidate):
                return candidate
    return None


def _first_halving(inputs: list[Any]) -> list[Any] | None:
    return next(_halvings(inputs), None)


def _halved_together(inputs: list[Any]) -> list[Any] | None:
    """Every dimension of at least FLOOR, in every input, halved; None where none is."""
    places = [
        (index, axis)
        for index, item in enumerate(inputs)
        if _shaped(item)
        for axis, dimension in enumerate(item["shape"])
        if dimension >= FLOOR
    ]
    return _halved(inputs, places) if places else None


def _shape_of(item: Any) -> Any:
    """What a run's answer is remembered by: an input less its range."""
    if not _shaped(item):
        return item
    return {key: value for key, value in item.items() if key not in ("low", "high")}


def _elements(inputs: list[Any]) -> int:
    return sum(math.prod(item["shape"]) for item in inputs if _shaped(item))


def _shaped(item: Any) -> bool:
    return isinstance(item, dict) and "shape" in item


def _halvings(inputs: list[Any]) -> Iterator[list[Any]]:
    """Candidates, largest sizes first: every dimension of one size halved together (sizes
    that are one dimension shared by several inputs), then each such dimension alone."""
    sizes = sorted(
        {size for item in inputs if _shaped(item) for size in item["shape"] if size > 1},
        reverse=True,
    )
    for size in sizes:
        places = [
            (index, axis)
            for index, item in enumerate(inputs)
            if _shaped(item)
            for axis, dimension in enumerate(item["shape"])
            if dimension == size
        ]
        yield _halved(inputs, places)
        if len(places) > 1:
            for place in places:
                yield _halved(inputs, [place])


def _halved(inputs: list[Any], places: list[tuple[int, int]]) -> list[Any]:
    halved = [dict(item) if _shaped(item) else item for item in inputs]
    for index, axis in places:
        shape = list(halved[index]["shape"])
        shape[axis] //= 2
        halved[index]["shape"] = shape
    return halved


def runs_well_formed(target: Target, inputs: list[Any]) -> bool:
    """Whether forward and backward run on `inputs` without an error, with finite outputs
    and gradients shaped as their inputs."""
    try:
        arguments = build_inputs(Case.model_validate({"name": "shrink", "inputs": inputs}), 0)
        outputs = target.call(*arguments)
        flat = [o for o in _tensors(outputs) if o.is_floating_point() or o.is_complex()]
        if not all(bool(torch.isfinite(o.detach()).all()) for o in flat):
            return False
        differentiable = [a for a in arguments if isinstance(a, torch.Tensor) and a.requires_grad]
        wanted = [o for o in flat if o.requires_grad]
        if not differentiable or not wanted:
            return True
        grad_outputs = [torch.ones_like(o) for o in wanted]
        gradients = torch.autograd.grad(wanted, differentiable, grad_outputs, allow_unused=True)
    except Exception:  # whatever forward or backward raise: this shape is not accepted
        return False
    return all(
        gradient is None
        or (gradient.shape == argument.shape and bool(torch.isfinite(gradient).all()))
        for gradient, argument in zip(gradients, differentiable, strict=True)
    )


def _tensors(outputs: Any) -> list[torch.Tensor]:
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, list | tuple):
        return [item for output in outputs for item in _tensors(output)]
    return []
