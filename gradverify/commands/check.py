"""`gradverify check`: specs, targets and packages -> one report, rendered, and its exit code."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gradverify.commands.options import FORMAT_NAMES, OutputFormat
from gradverify.commands.terminal import use_color, width
from gradverify.exitcodes import ExitCode

if TYPE_CHECKING:
    from gradverify.run.coverage import PackageWork
    from gradverify.run.session import RunOptions
    from gradverify.spec.load import SpecEntry
    from gradverify.spec.plan import Plan


@dataclass(frozen=True)
class Scope:
    """How `check` reads its paths, and the flags that [tool.gradverify] must not override."""

    all_files: bool = False
    changed_files: bool = False
    jobs: int | None = None
    extra_checks: tuple[str, ...] = ()  # --extra-check
    require_specs: bool = False


def run_check(
    paths: list[str],
    spec: str | None,
    options: RunOptions,
    output_format: OutputFormat | None,
    quiet: bool,
    scope: Scope,
    output: str | None = None,
    verbose: bool = False,
) -> int:
    from gradverify.run import session

    session.start_early(options)
    from gradverify.report import FORMATS, RenderOptions
    from gradverify.run.progress import progress_listener
    from gradverify.spec.changed_files import resolve
    from gradverify.spec.config import load_config, with_defaults, with_extra_checks
    from gradverify.spec.plan import Plan, make_plan

    # Flags win over [tool.gradverify]; spec keys win over it too (config.with_defaults).
    config = load_config(formats=FORMAT_NAMES)
    output_format = output_format or OutputFormat(config.settings.format or OutputFormat.text.value)
    if scope.jobs is None and config.settings.jobs is not None:
        options = replace(options, jobs=config.settings.jobs)
    work = resolve(paths, config.spec_paths, scope.all_files, scope.changed_files)
    plan = make_plan(work.arguments, spec, config.spec_paths) if work.arguments else Plan()
    entries = [*plan.entries, *work.entries]
    notes = [note for note in (config.note, *work.notes, *plan.notes) if note]
    for entry, note in session.infer_entries(plan.bare_targets, options):
        entries.append(entry)
        notes.append(note)
    package = _package_work(plan, entries, options, scope.require_specs)
    if package is not None:
        entries.extend(package.entries)
        notes.extend(package.notes)
    entries = with_extra_checks(with_defaults(entries, config), scope.extra_checks)
    terminal_format = OutputFormat.text if output is not None else output_format
    show_progress = terminal_format is OutputFormat.text and sys.stderr.isatty()
    with progress_listener(enabled=show_progress) as listener:
        report = session.run(entries, options, notes, listener)
    if package is not None:
        report = replace(report, coverage=package.coverage)
    render_options = RenderOptions(color=use_color(), width=width(), quiet=quiet, verbose=verbose)
    sys.stdout.write(FORMATS[terminal_format.value](report, render_options))
    if output is not None:
        file_options = RenderOptions(quiet=quiet, verbose=verbose)
        write_report(output, FORMATS[output_format.value](report, file_options))
    return ExitCode.OK if report.passed else ExitCode.FAILED


def _package_work(
    plan: Plan, given: list[SpecEntry], options: RunOptions, require_specs: bool
) -> PackageWork | None:
    """The Functions found in package arguments (`gradverify check mypkg`), or None."""
    from gradverify.errors import UsageError
    from gradverify.run.coverage import package_work

    if not plan.code_arguments:
        if require_specs:
            raise UsageError(
                "--require-specs needs a package or a directory of code to find Functions in, "
                "e.g. `gradverify check mypkg --require-specs`"
            )
        return None
    return package_work(plan.defined, given, options, require_specs)


def write_report(path: str, report: str) -> None:
    """`--output FILE`: the report in the chosen format, its directory made if need be."""
    from pathlib import Path

    from gradverify.errors import UsageError

    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(report, encoding="utf-8")
    except OSError as error:
        where = f" ({error.filename})" if error.filename and error.filename != path else ""
        raise UsageError(f"cannot write --output {path}: {error.strerror}{where}") from None
