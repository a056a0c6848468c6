"""Output formats: one module per format, each with `render(report, options) -> str`.

A format's module is imported when it is first asked for: a run imports the one renderer
(or two, with `--output`) that it writes with, not all six.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping

from gradverify.report.options import RenderOptions
from gradverify.results import Report

Renderer = Callable[[Report, RenderOptions], str]

# Format name -> the module under gradverify.report that renders it, in the order `--format`
# lists them.
_MODULES = {
    "text": "text",
    "json": "json_format",
    "junit": "junit",
    "github": "github",
    "sarif": "sarif",
    "html": "html",
}


class _Renderers(Mapping[str, Renderer]):
    """Format name -> its `render`, importing the format's module on first use."""

    def __getitem__(self, name: str) -> Renderer:
        module = importlib.import_module(f"gradverify.report.{_MODULES[name]}")
        render: Renderer = module.render
        return render

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


FORMATS: Mapping[str, Renderer] = _Renderers()

__all__ = ["FORMATS", "RenderOptions", "Renderer"]
