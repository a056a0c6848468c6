"""The check catalogue: every check, once, torch-free.

For each check: its public id, where its class lives (imported only when the check runs),
its one-line description and its explanation. The order is the order checks run in by
default. The CLI's `checks` and `explain`, the spec's `CheckId`, the registry, the engine and
the docs all read from here, so adding a check is one module and one entry. The lint rules
(GV101...) live here too: `gradverify explain GV103` must not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradverify.catalogue.explanations import EXPLANATIONS


@dataclass(frozen=True)
class CheckEntry:
    """One check as the catalogue knows it."""

    id: str
    implementation: str  # "module:Class", imported lazily by gradverify.checks.get_check
    description: str  # one line, for `gradverify checks` and the explain index
    about_backward: bool = False  # its findings point at the user's backward
    # It compares backward's gradient with forward's derivative: the engine's judges
    # re-decide its failures, and later checks ask whether it passed before they trust
    # backward's values.
    first_order: bool = False
    # Modules the check imports when it first runs, heavy enough to import once in the fork
    # server (before a run's workers fork) when a run is about to run the check.
    imports: tuple[str, ...] = ()

    @property
    def explanation(self) -> str:
        """How the check works and how to fix what it commonly finds."""
        return EXPLANATIONS[self.id]


CATALOGUE: tuple[CheckEntry, ...] = (
    CheckEntry(
        id="lint",
        implementation="gradverify.checks.lint:LintCheck",
        description=(
            "known pitfalls of hand-written Functions (GV101–GV106), from the source and "
            "the graph node"
        ),
    ),
    CheckEntry(
        id="forward",
        implementation="gradverify.checks.forward:ForwardCheck",
        description=(
            "forward runs, returns floating outputs with no NaN/Inf, and does not modify "
            "its inputs in place"
        ),
    ),
    CheckEntry(
        id="backward",
        implementation="gradverify.checks.backward:BackwardCheck",
        description=(
            "backward returns one well-formed, finite gradient per argument, "
            "deterministically and linearly in grad_output, without modifying it"
        ),
        about_backward=True,
    ),
    CheckEntry(
        id="layouts",
        implementation="gradverify.checks.layouts:LayoutsCheck",
        description=(
            "non-contiguous arguments and arguments with requires_grad off give the same "
            "outputs and gradients as the declared layout"
        ),
        about_backward=True,
    ),
    CheckEntry(
        id="finite_difference",
        implementation="gradverify.checks.finite_difference:FiniteDifferenceCheck",
        description=(
            "backward's Jacobian matches central finite differences, per argument, in float64"
        ),
        about_backward=True,
        first_order=True,
    ),
    CheckEntry(
        id="gradcheck",
        implementation="gradverify.checks.gradcheck:GradcheckCheck",
        description=("torch.autograd.gradcheck passes (float64, the spec's tolerances)"),
        about_backward=True,
        first_order=True,
    ),
    CheckEntry(
        id="gradgradcheck",
        implementation="gradverify.checks.gradgradcheck:GradgradcheckCheck",
        description=(
            "torch.autograd.gradgradcheck passes: second derivatives (double backward) are right"
        ),
        about_backward=True,
    ),
    CheckEntry(
        id="expected_gradient",
        implementation="gradverify.checks.expected_gradient:ExpectedGradientCheck",
        description=(
            "a surrogate backward returns the gradient its `expected_gradient` function describes"
        ),
        about_backward=True,
    ),
    CheckEntry(
        id="reference",
        implementation="gradverify.checks.reference:ReferenceCheck",
        description=(
            "forward outputs and gradients match a plain-PyTorch reference (float64 "
            "tolerance, or k × the reference's own error in a lower dtype)"
        ),
    ),
    CheckEntry(
        id="jvp",
        implementation="gradverify.checks.jvp:JvpCheck",
        description=(
            "the Function's jvp (forward-mode AD) matches central differences along seeded "
            "random tangents, per argument, in float64"
        ),
    ),
    CheckEntry(
        id="vmap",
        implementation="gradverify.checks.vmap:VmapCheck",
        description=(
            "torch.vmap over a batch of 3 gives the outputs and gradients of a loop over "
            "the same inputs"
        ),
    ),
    CheckEntry(
        id="func",
        implementation="gradverify.checks.func:FuncCheck",
        description=(
            "torch.func.grad, vjp and jacrev over the Function (and jacfwd, given a jvp and "
            "a vmap rule) agree with central finite differences, in float64"
        ),
    ),
    CheckEntry(
        id="opcheck",
        implementation="gradverify.checks.opcheck:OpcheckCheck",
        description=(
            "a custom op's schema, autograd registration, fake implementation and AOT "
            "tracing pass torch.library.opcheck"
        ),
    ),
    CheckEntry(
        id="compile",
        implementation="gradverify.checks.compile:CompileCheck",
        description=(
            'under torch.compile(backend="aot_eager", fullgraph=True), outputs and '
            "gradients equal eager's, with no graph break"
        ),
        imports=("torch._dynamo",),  # about 0.6 s of CPU in every process that compiles
    ),
)
ENTRIES: dict[str, CheckEntry] = {entry.id: entry for entry in CATALOGUE}
# Checks whose findings are about backward: a finding points at the user's backward too.
BACKWARD_CHECKS = frozenset(entry.id for entry in CATALOGUE if entry.about_backward)
# The first-order checks, in the order they run: ("finite_difference", "gradcheck").
FIRST_ORDER_CHECKS = tuple(entry.id for entry in CATALOGUE if entry.first_order)
# The one-line descriptions by id (`gradverify checks`, `gradverify explain`).
SUMMARIES: dict[str, str] = {entry.id: entry.description for entry in CATALOGUE}

# id -> (title, remedy). The ids are public: keep them stable, add new ones at the end.
LINT_RULES: dict[str, tuple[str, str]] = {
    "GV101": (
        "input or output of forward stored as an attribute of ctx",
        "save inputs and outputs with ctx.save_for_backward(...) and read them from "
        "ctx.saved_tensors. An output on ctx makes a reference cycle that leaks memory, and an "
        "input or output on ctx escapes the check that catches its later in-place "
        "modification; a mask or a detached intermediate may stay on ctx",
    ),
    "GV102": (
        "`.data` used in forward or backward",
        "use .detach() (or compute under torch.no_grad()) instead of .data: .data hides the "
        "operation from autograd and from the version counter, so wrong gradients pass silently",
    ),
    "GV103": (
        "in-place operation on grad_output or a saved tensor in backward",
        "compute a new tensor (grad_output * 2, not grad_output.mul_(2)); clone first if you "
        "must work in place. grad_output may be shared with other parts of the graph, and a "
        "saved tensor may be the caller's input",
    ),
    "GV104": (
        "backward returns a different number of values than forward has arguments",
        "return one gradient per forward argument, in order, with None for arguments that "
        "have no gradient (literals, integer tensors); extra trailing values must be None",
    ),
    "GV105": (
        "save_for_backward given a non-tensor",
        "save only tensors (or None) with ctx.save_for_backward; store other values as ctx "
        "attributes (ctx.alpha = alpha)",
    ),
    "GV106": (
        "in-place change in forward to a tensor already saved for backward",
        "save the tensor after its last in-place change, or change a clone (y = y.clone()). "
        "torch records a saved tensor's version only when forward returns, so a change made "
        "after save_for_backward goes unnoticed and backward silently uses the changed values",
    ),
}
