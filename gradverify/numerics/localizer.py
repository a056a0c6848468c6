"""Randomized mode: random projections vᵀJu, and group testing to name a wrong Jacobian entry.

One backward with grad_outputs v gives vᵀJ, a full vector per argument; central differences
along a direction u give vᵀJu from two forward calls. Their difference, the discrepancy, is
linear in u, so for any subset S of an argument's elements the discrepancy of u restricted
to S costs two forward calls. Bisecting S, keeping the half whose discrepancy is (relative
to its allowance) the larger, names one input element in 2·log2(n) forward calls; bisecting
the support of v at that element, one backward per level, names the output element. That
single Jacobian entry is then judged exactly as in full mode, kinks included.

Tolerances. torch's fast gradcheck allows |vᵀAu - vᵀNu| <= atol·Σu·Σv + rtol·|vᵀNu|
(`_adjusted_atol`): the element-wise rule |A_ij - N_ij| <= atol + rtol·|N_ij| summed over
all n·m entries. That bound is sound but blind where it matters here: for a 10⁶-element
elementwise Function, with torch's positive unit-norm u and v, it allows a discrepancy of
atol·Σu·Σv ≈ 7.5, while one wrong entry off by 0.2 moves vᵀJu by 0.2·v_i·u_j ≈ 1.5e-7. Any
bound that sums allowances over entries shares that blindness (the rtol term too). So here
a projection never decides a verdict; it decides where to look:

- detection: a projection is searched when |discrepancy| exceeds
  atol + 64 ulp·(‖v∘f(x)‖₂/eps + ‖vᵀJ∘u‖₂): a single entry's allowance, plus the rounding of
  forward (through the central difference) and of backward; random signs make those sums
  grow as 2-norms. u and v have entries ±(1 + U[0, 1)): random signs keep wrong entries from
  cancelling, and magnitudes of at least 1 make one wrong entry move its projection by at
  least its own error, so an entry full mode flags (error > atol + rtol·|N_ij|) stands out
  unless other entries' errors, each within tolerance, add up to more. No truncation term:
  measuring it by a second step size would also absorb kinks and jumps, which must be found.
- verdict: `fail` only at a Jacobian entry that fails the full-mode rule
  |A_ij - N_ij| <= atol + rtol·|N_ij|, with N_ij the very central difference full mode takes,
  and that is not at a kink where backward gives a valid subgradient. So randomized mode
  never fails a Function full mode would pass. A search that ends at a correct entry (errors
  spread thinly, each within tolerance, or a high-curvature region) is only a note: a
  detection threshold set too low costs calls, never a false alarm.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import torch

from gradverify.numerics import seeded
from gradverify.numerics.diagonal import DiagonalKinks, diagonal_kinks, is_elementwise
from gradverify.numerics.kinks import kink_at, nondifferentiable_rows
from gradverify.numerics.localization import Entry, Examination, Problem
from gradverify.numerics.noise import ROUNDING_ULPS, faint_rows, noise_rows, reach
from gradverify.numerics.salts import Salt
from gradverify.numerics.sampling import line_through, sample
from gradverify.usercode import user_code

PROJECTIONS = 3  # random (u, v) pairs per argument
MAX_SEARCHES = 20  # group tests per argument, after the kinks of an elementwise Function
LISTED = 1_000  # entries at kinks kept one by one; beyond, only counted
# The step of the projections' central differences, in eps: |u| < 2, so that no element
# moves further than eps, the distance at which settle and the kink tests look for kinks.
STEP = 0.5
UNIT_ROUNDOFF = float(torch.finfo(torch.float64).eps)


class Localizer:
    """Projections of one Problem and group tests on them; counts the calls it makes."""

    def __init__(self, problem: Problem, generator: Callable[[int], torch.Generator]) -> None:
        self.problem = problem
        self.generator = generator
        self.forward_calls = 0
        self.backward_calls = 0
        self.base = _flat(problem.outputs)
        self._finite_base = torch.nan_to_num(self.base, nan=0.0, posinf=0.0, neginf=0.0)
        self._projections: dict[int, tuple[torch.Tensor, dict[int, torch.Tensor]]] = {}
        self.noisy = False  # rounding noise seen: faint roughness is more of it (noise.py)
        self.step = STEP * problem.eps

    def examine(self, position: int, search: bool = True, kinks_first: bool = True) -> Examination:
        """Detect, localize and judge discrepancies in the block of values[position]; with
        `search` off, only measure the projections.

        `kinks_first` off (a search after a pass; on to hold kinks fixed): the kinks of an
        elementwise Function are judged once a projection differs; where they take elements
        out, the projections start again. The same answer as judging them first, in as many
        calls where one differs and six fewer where none does (no elementwise test, no kink
        screen); only kinks no projection sees (farther than its step, within eps) go unsaid.
        """
        forward_before, backward_before = self.forward_calls, self.backward_calls
        exam = Examination(position)
        size = self.problem.values[position].numel()
        active = torch.ones(size, dtype=torch.bool, device=self.problem.values[position].device)
        kinks_judged = not (search and size) or kinks_first
        if search and size and kinks_first:
            self._judge_kinks(exam, active)
        searches, projection = 0, 0
        while projection < (PROJECTIONS if size else 0):
            v, grads = self._projection(projection)
            g, u = grads[position], self._direction(projection, position, size)
            projection += 1
            while not exam.exhausted:
                discrepancy, threshold, analytical = self._detect(position, v, g, u, active)
                if len(exam.projected) < projection:
                    exam.projected.append((analytical, analytical - discrepancy))
                if abs(discrepancy) <= threshold or not search or not active.any():
                    break
                if not kinks_judged:
                    self._judge_kinks(exam, active)
                    kinks_judged = True
                    if not active.all():  # kinks taken out: every projection again
                        projection = 0
                        exam.projected.clear()
                        break
                if searches == MAX_SEARCHES:
                    exam.exhausted = True
                    break
                searches += 1
                column = self._search_column(position, v, g, u, active, discrepancy)
                active[column] = False
                entry = self._examine_column(position, column, v, float(g[column]))
                if entry.excused:
                    exam.excused.append(entry)
                    continue  # the same projection again, without the kink
                if entry.wrong:
                    exam.wrong.append(entry)
                else:
                    exam.spread.append((discrepancy, threshold))
                break
        if self.noisy:  # entries judged before the noise was seen
            exam.wrong += [replace(e, kink=None, noise=True) for e in exam.excused if e.faint]
            exam.excused = [entry for entry in exam.excused if not entry.faint]
            exam.wrong = [replace(e, noise=e.noise or e.faint) for e in exam.wrong]
        exam.forward_calls = self.forward_calls - forward_before
        exam.backward_calls = self.backward_calls - backward_before
        return exam

    def _judge_kinks(self, exam: Examination, active: torch.Tensor) -> None:
        """Every element of an elementwise Function within eps of a kink, judged at once
        (`numerics/diagonal.py`) and taken out of the projections: excused where backward lies
        between the one-sided slopes, wrong where it does not."""
        problem, position = self.problem, exam.position
        base = self.base if len(problem.outputs) == 1 else None
        if base is None or not is_elementwise(self._evaluate, problem.values, position, base):
            return
        found = diagonal_kinks(
            self._evaluate, problem.values, position, problem.eps, problem.atol, problem.rtol,
            base,
        )  # fmt: skip
        self.noisy = self.noisy or found.noisy
        if not found.count:
            return
        analytical, consistent = self._diagonal(position, found.columns)
        numerical = found.central
        admitted = found.admitted(analytical, problem.atol, problem.rtol) & consistent
        exam.near = found.columns[admitted]
        off = ~((analytical - numerical).abs() <= problem.atol + problem.rtol * numerical.abs())
        for at in (off & consistent).nonzero().flatten().tolist():
            self._kink_entry(exam, found, at, float(analytical[at]), float(numerical[at]))
        # A column of a diagonal Jacobian is its diagonal entry, judged here as full mode
        # judges it: off or not, the projections need not look at it again.
        active[found.columns[consistent]] = False

    def _kink_entry(
        self, exam: Examination, found: DiagonalKinks, at: int, analytical: float, numerical: float
    ) -> None:
        problem, column = self.problem, int(found.columns[at])
        kink = found.kink(at, analytical, problem.atol, problem.rtol)
        entry = Entry(
            exam.position, column, column, analytical, numerical, True, kink=kink,
            faint=kink.faint,
        )  # fmt: skip
        if entry.excused:
            if len(exam.excused) < LISTED:
                exam.excused.append(entry)
            else:
                exam.unlisted_excused += 1
        elif len(exam.wrong) < LISTED:
            exam.wrong.append(entry)
        else:
            exam.unlisted_wrong += 1

    def _diagonal(self, position: int, columns: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """backward's diagonal entries at `columns` (vᵀJ / v, a diagonal Jacobian), and where two
        projections agree on them (elsewhere backward mixes elements: left to the search)."""
        values = []
        for projection in range(2):
            v, grads = self._projection(projection)
            values.append(grads[position][columns] / v[columns])
        first, second = values
        agree = (first - second).abs() <= self.problem.atol + self.problem.rtol * first.abs()
        return first, agree

    def _evaluate(self, *values: Any) -> Sequence[torch.Tensor]:
        """The problem's outputs at `values`, on fresh copies (a forward writing into its
        inputs must not compound), counted."""
        copies = [
            v.detach().clone().requires_grad_(v.requires_grad) if isinstance(v, torch.Tensor) else v
            for v in values
        ]
        with user_code("forward"):
            outputs = self.problem.evaluate(*copies)
        self.forward_calls += 1
        return outputs

    def _projection(self, index: int) -> tuple[torch.Tensor, dict[int, torch.Tensor]]:
        """(v, {position: vᵀJ}) of projection `index`: one backward, shared by every argument."""
        if index not in self._projections:
            v = _weights(
                self.base.numel(),
                self.generator(Salt.LOCALIZER_PROJECTIONS + 1000 * index),
                self.base.device,
            )
            self._projections[index] = (v, self._backward(v))
        return self._projections[index]

    def _direction(self, projection: int, position: int, size: int) -> torch.Tensor:
        return _weights(
            size,
            self.generator(Salt.LOCALIZER_PROJECTIONS + 1000 * projection + 1 + position),
            self.problem.values[position].device,
        )

    def _detect(
        self,
        position: int,
        v: torch.Tensor,
        g: torch.Tensor,
        u: torch.Tensor,
        active: torch.Tensor,
    ) -> tuple[float, float, float]:
        """(discrepancy, threshold, analytical) of vᵀJu over the active elements."""
        support = active.nonzero().flatten()
        projected = g[support] * u[support]
        analytical = float(projected.sum())
        numerical = self._numerical(position, support, u, self.step, v)
        rounding = float((v * self._finite_base).norm()) / self.step
        rounding += float(projected.norm())
        threshold = self.problem.atol + ROUNDING_ULPS * UNIT_ROUNDOFF * rounding
        return analytical - numerical, threshold, analytical

    def _search_column(
        self,
        position: int,
        v: torch.Tensor,
        g: torch.Tensor,
        u: torch.Tensor,
        active: torch.Tensor,
        discrepancy: float,
    ) -> int:
        """Bisect the active elements down to the one carrying the largest discrepancy."""
        candidates = active.nonzero().flatten()
        allowance = _cumulative_allowance(g * u, candidates, self.problem)
        low, high = 0, candidates.numel()
        while high - low > 1:
            middle = (low + high) // 2
            half = candidates[low:middle]
            left = float((g[half] * u[half]).sum()) - self._numerical(
                position, half, u, self.step, v
            )
            right = discrepancy - left  # linear in u: no forward calls for the other half
            if _score(left, allowance, low, middle) >= _score(right, allowance, middle, high):
                high, discrepancy = middle, left
            else:
                low, discrepancy = middle, right
        return int(candidates[low])

    def _examine_column(self, position: int, column: int, v: torch.Tensor, g: float) -> Entry:
        """A wrong entry of one Jacobian column if there is one, judged as full mode judges.

        The row where the column's central difference is largest comes first (one backward:
        the diagonal of an elementwise Function); otherwise v's support is bisected.
        """
        value = self._copy(position)
        flat = value.view(-1)
        original = flat[column].item()
        flat[column] = original + self.problem.eps
        plus = self._outputs_at(position, value.clone())
        flat[column] = original - self.problem.eps
        minus = self._outputs_at(position, value)
        numerical = (plus - minus) / (2 * self.problem.eps)
        largest = int(torch.nan_to_num(numerical.abs(), nan=math.inf).argmax())
        entry = self._judge(position, largest, column, numerical)
        if entry.off or numerical.numel() == 1:
            return entry
        row = self._search_row(position, column, v, g, numerical)
        return entry if row == largest else self._judge(position, row, column, numerical)

    def _judge(self, position: int, row: int, column: int, numerical: torch.Tensor) -> Entry:
        """Entry (row, column) by the full-mode rule, with the kink test when it is off."""
        one_hot = torch.zeros_like(self.base)
        one_hot[row] = 1.0
        analytical = float(self._backward(one_hot)[position][column])
        expected = float(numerical[row])
        difference = abs(analytical - expected)
        off = not difference <= self.problem.atol + self.problem.rtol * abs(expected)
        entry = Entry(position, row, column, analytical, expected, off)
        return self._roughness(entry, numerical) if off else entry

    def _search_row(
        self, position: int, column: int, v: torch.Tensor, g: float, numerical: torch.Tensor
    ) -> int:
        """Bisect the support of v down to the output element whose entry is the most off."""
        allowance = _cumulative_allowance(v * numerical, None, self.problem)
        discrepancy = g - float(v @ numerical)
        low, high = 0, numerical.numel()
        while high - low > 1:
            middle = (low + high) // 2
            restricted = torch.zeros_like(v)
            restricted[low:middle] = v[low:middle]
            left = float(self._backward(restricted)[position][column]) - float(
                restricted @ numerical
            )
            right = discrepancy - left
            if _score(left, allowance, low, middle) >= _score(right, allowance, middle, high):
                high, discrepancy = middle, left
            else:
                low, discrepancy = middle, right
        return low

    def _roughness(self, entry: Entry, numerical: torch.Tensor) -> Entry:
        """An off entry with what sampling shows there, as `kinks.find_kinks` samples it: a
        kink, rounding noise, or nothing (smooth)."""
        problem, row, column = self.problem, entry.row, entry.column
        value = problem.values[entry.position]
        direction = torch.zeros(value.numel(), dtype=torch.float64, device=value.device)
        direction[column] = 1.0
        line = line_through(problem.evaluate, problem.values, entry.position, direction)

        def counted(t: float) -> torch.Tensor:
            # The entry's own output element alone: every row is judged on its own samples,
            # and at 10⁷ outputs the samples of all of them take gigabytes to analyse.
            self.forward_calls += 1
            with user_code("forward"):
                return line(t)[row : row + 1]

        values = sample(counted, problem.eps)
        tolerance = problem.atol + problem.rtol * numerical[row : row + 1].abs()
        flagged = bool(nondifferentiable_rows(values, problem.eps, tolerance)[0])
        x_scale = abs(float(problem.values[entry.position].detach().reshape(-1)[column]))
        faint = flagged and bool(faint_rows(values, problem.eps, x_scale)[0])
        if not flagged:
            small = entry.error <= float(reach(values, problem.eps, x_scale)[0]) / problem.eps
            return replace(entry, faint=small, noise=small and self.noisy)
        if faint:
            only = torch.ones(1, dtype=torch.bool, device=values.device)
            if self.noisy or bool(
                noise_rows(counted, values, problem.eps, only, problem.atol, problem.rtol)[0]
            ):
                self.noisy = True
                return replace(entry, noise=True, faint=True)
        kink = kink_at(
            values, 0, column, entry.analytical, problem.eps, problem.atol, problem.rtol, faint
        )
        return replace(entry, kink=replace(kink, row=row), faint=faint)

    def _numerical(
        self, position: int, support: torch.Tensor, u: torch.Tensor, step: float, v: torch.Tensor
    ) -> float:
        """vᵀ(f(x + step·u) - f(x - step·u)) / 2step, u restricted to the flat `support`."""
        moves = u[support] * step
        plus, minus = self._copy(position), self._copy(position)
        plus.view(-1).index_add_(0, support, moves.to(plus.dtype))
        minus.view(-1).index_add_(0, support, -moves.to(minus.dtype))
        difference = self._outputs_at(position, plus) - self._outputs_at(position, minus)
        return float(v @ difference) / (2 * step)

    def _copy(self, position: int) -> torch.Tensor:
        value: torch.Tensor = self.problem.values[position].detach()
        return value.clone(memory_format=torch.contiguous_format)

    def _outputs_at(self, position: int, value: torch.Tensor) -> torch.Tensor:
        """The flat outputs with values[position] replaced by `value`, a tensor of our own."""
        # Fresh copies each time, as full mode: a forward that writes into its inputs must
        # not compound.
        perturbed = [
            a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
            for i, a in enumerate(self.problem.values)
            if i != position
        ]
        perturbed.insert(
            position, value.requires_grad_(self.problem.values[position].requires_grad)
        )
        with torch.no_grad(), user_code("forward"):
            outputs = self.problem.evaluate(*perturbed)
        self.forward_calls += 1
        return _flat(outputs)

    def _backward(self, v: torch.Tensor) -> dict[int, torch.Tensor]:
        """vᵀJ for every position, flat, from one backward through the problem's graph."""
        problem = self.problem
        pieces = torch.split(v, [o.numel() for o in problem.outputs])
        connected = [
            (o, p.reshape(o.shape).to(o.dtype))
            for o, p in zip(problem.outputs, pieces, strict=True)
        ]
        connected = [(o, p) for o, p in connected if o.requires_grad]
        sources = [problem.values[p] for p in problem.positions]
        total = [torch.zeros(s.numel(), dtype=torch.float64, device=s.device) for s in sources]
        for _ in range(problem.samples if connected else 0):
            with user_code(problem.phase):
                grads = torch.autograd.grad(
                    [o for o, _ in connected], sources, [p for _, p in connected],
                    retain_graph=True, allow_unused=True,
                )  # fmt: skip
            self.backward_calls += 1
            for running, grad in zip(total, grads, strict=True):
                if grad is not None:
                    running += grad.detach().reshape(-1).to(torch.float64)
        return {
            p: running / problem.samples
            for p, running in zip(problem.positions, total, strict=True)
        }


def _flat(outputs: Sequence[torch.Tensor]) -> torch.Tensor:
    """Outputs as one float64 vector, detached (no copy for a single float64 output)."""
    pieces = [o.detach().reshape(-1).to(torch.float64) for o in outputs]
    return pieces[0] if len(pieces) == 1 else torch.cat(pieces)


def _weights(size: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """±(1 + U[0, 1)): random signs, and magnitudes that neither vanish nor cancel exactly.
    Drawn by the (CPU) generator, the same on every device, then moved to `device`."""
    uniform = seeded.uniform((size,), generator, device) * 2 - 1
    return uniform + uniform.sign()


def _cumulative_allowance(
    projected: torch.Tensor, order: torch.Tensor | None, problem: Problem
) -> torch.Tensor:
    """Prefix sums of (atol + rtol·|projected entry|)², in `order`: a group's allowance is
    the root of its share, the spread of within-tolerance errors under random signs."""
    # In place, and no gather when `order` is every element: at 10⁷ elements each
    # temporary is 80 MB.
    selected = projected if order is None else projected[order]
    allowance = selected.abs().mul_(problem.rtol).add_(problem.atol).pow_(2)
    allowance.nan_to_num_(nan=0.0, posinf=0.0)
    cumulative = allowance.new_zeros(allowance.numel() + 1)
    torch.cumsum(allowance, 0, out=cumulative[1:])
    return cumulative


def _score(discrepancy: float, cumulative: torch.Tensor, low: int, high: int) -> float:
    """How many allowances off a group is; a NaN discrepancy ranks first."""
    if math.isnan(discrepancy):
        return math.inf
    allowance = math.sqrt(max(float(cumulative[high] - cumulative[low]), 0.0))
    return abs(discrepancy) / max(allowance, 1e-300)


def examine_all(
    problem: Problem,
    generator: Callable[[int], torch.Generator],
    search: bool = True,
    kinks_first: bool = True,
) -> dict[int, Examination]:
    """Every position of `problem` examined in turn by one Localizer (which shares its
    projections and what it learns between them). `kinks_first`: `Localizer.examine`."""
    localizer = Localizer(problem, generator)
    return {p: localizer.examine(p, search, kinks_first) for p in problem.positions}
