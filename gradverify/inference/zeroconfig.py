"""Zero-config runs: a spec inferred (gradverify.inference.from_signature) when the user wrote none."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from gradverify.errors import GradverifyError
from gradverify.inference.choice import CASE, Inference
from gradverify.inference.from_signature import infer
from gradverify.inference.spec_text import file_name, spec_text
from gradverify.inference.surrogates import surrogate_note
from gradverify.spec.load import SpecEntry

if TYPE_CHECKING:
    from gradverify.target.loaded import Target


class InferenceStore(Protocol):
    """Where inferred specs are kept between runs (gradverify.run.cache.ResultCache)."""

    def lookup_inference(self, target: str) -> dict[str, Any] | None: ...

    def store_inference(self, target: str, inferred: dict[str, Any]) -> None: ...


class InferenceError(GradverifyError):
    """forward rejected every input inferred from its signature.

    `reason` says why inference stopped, in one plain line (for a coverage summary).
    """

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message.splitlines()[0]


def infer_entry(target: Target) -> tuple[SpecEntry, str]:
    """A spec entry for `target` with one case, and a note saying what was inferred."""
    if target.variadic is not None and not target.parameters:
        reason = f"forward takes *{target.variadic}: how many inputs needs a spec"
        raise InferenceError(_needs_a_spec(target), reason)
    inference = infer(target)
    if inference.stopped is not None:
        raise InferenceError(_explain(inference), inference.stopped)
    return SpecEntry(spec=inference.spec(CASE), file=None), _note(inference)


def inferred(target_spec: str) -> dict[str, Any]:
    """`infer_entry` for a target named by `target_spec`, as the plain data the cache keeps
    (and a worker process sends back: gradverify.run.session infers in one when isolated)."""
    from gradverify.target.loading import load_target

    entry, note = infer_entry(load_target(target_spec))
    # only the keys inference wrote: a key the spec leaves unsaid (`gradient:`) stays unsaid,
    # for intent to decide where the checks run (gradverify.engine.intent)
    return {"spec": entry.spec.model_dump(mode="json", exclude_unset=True), "note": note}


def cached_entry(
    target_spec: str,
    cache: InferenceStore | None,
    infer: Callable[[str], dict[str, Any]] = inferred,
) -> tuple[SpecEntry, str]:
    """`infer(target_spec)`, answered from `cache` while the target's source is unchanged.

    A hit neither imports torch nor runs the user's code, so an unchanged zero-config run
    whose case is cached too takes no longer than a cached run of a written spec.
    """
    stored = cache.lookup_inference(target_spec) if cache is not None else None
    if stored is not None:
        with contextlib.suppress(KeyError, TypeError, ValueError):  # another version's: again
            return _entry(stored)
    fresh = infer(target_spec)
    if cache is not None:
        cache.store_inference(target_spec, fresh)
    return _entry(fresh)


def _entry(stored: dict[str, Any]) -> tuple[SpecEntry, str]:
    from gradverify.spec.models import FunctionSpec

    spec = FunctionSpec.model_validate(stored["spec"])
    return SpecEntry(spec=spec, file=None), str(stored["note"])


def _note(inference: Inference) -> str:
    note = (
        f"no spec names {inference.target}; inputs inferred from forward's signature and "
        f"trial runs ({inference.summary()}): {inference.coverage()}. `gradverify init "
        f"{inference.target}` writes them to specs/{file_name(inference.target)} to adjust."
    )
    if inference.surrogate:
        note += (
            f" {surrogate_note(inference.surrogate)}"
            " (backward is not compared with the derivative; every structural check runs)."
        )
    elif inference.random_backward is not None:
        note += f" {inference.random_backward.note()}."
    if not inference.ran:
        note += " forward ran on them but backward did not run well on any guess: see below."
    return note


def _needs_a_spec(target: Target) -> str:
    """forward(ctx, *tensors): how many inputs, and of what shape, only a spec can say."""
    path = f"specs/{file_name(target.spec)}"
    return (
        f"cannot infer inputs for {target.spec}: forward takes *{target.variadic}, any number "
        f"of inputs, so how many to pass needs a spec. `gradverify init {target.spec}` "
        f"writes a starter ({path}) to fill in; then run: gradverify check {path}"
    )


def _explain(inference: Inference) -> str:
    path = f"specs/{file_name(inference.target)}"
    return "\n".join(
        [
            f"cannot infer inputs for {inference.target}: {inference.stopped}",
            f"Write a spec that gives the inputs, e.g. {path} (`gradverify init "
            f"{inference.target}` writes it):",
            "",
            spec_text(inference).rstrip("\n"),
            "",
            f"then run: gradverify check {path}",
        ]
    )
