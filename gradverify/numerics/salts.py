"""The salts of every seeded generator, named by purpose: one table, so that a new purpose
picks a value no other uses. `CaseContext.generator(salt)` mixes the salt into the case's
seed. The values fix every seeded number a check draws: changing one changes results."""

from __future__ import annotations

from enum import IntEnum


class Salt(IntEnum):
    """A generator's purpose -> its salt. Some purposes share a value on purpose (history):
    they draw in different checks and so never meet."""

    BACKWARD_GRAD_OUTPUTS = 1  # backward's grad_outputs; compile calls backward with the same
    GRADGRADCHECK_GRAD_OUTPUTS = 2  # the grad_outputs torch's gradgradcheck differentiates through
    LAYOUTS_GRAD_OUTPUTS = 3  # the same in the baseline and every layout variant
    EXPECTED_GRADIENT_GRAD_OUTPUTS = 3
    UNREDUCED_DIRECTION = 3  # the direction a delivered gradient is checked along
    REFERENCE_GRAD_OUTPUTS = 5
    JVP_TANGENT = 300  # + the argument's index: one argument's tangent
    JVP_JOINT_TANGENT = 400  # + the argument's index: all arguments' tangents together
    VMAP_WEIGHTS = 500
    FUNC_TRANSFORMS = 900  # the weights of the torch.func transforms' rows
    FUNC_DIRECTION = 910  # + the argument's index: a random direction u for wᵀJu
    LOCALIZER_PROJECTIONS = 4_001  # + offsets per projection; away from the salts above
    DIAGONAL_PROBE = 6_007  # a seed of its own (not mixed with the case's seed)
    OWN_PRECISION_DIRECTIONS = 7_001  # finite_difference's float32 directions u and weights v
    GAUGE_WEIGHTS = 8_001  # + the argument's index: the W of <W, B Bᵀ> (numerics/gauge.py)
    EXPECTATION = 9_001  # a random forward's seeds, directions and weights (expectation.py)
