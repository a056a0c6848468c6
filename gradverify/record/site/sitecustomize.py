"""Started by `gradverify record` (this directory first on PYTHONPATH): record the calls of
autograd Functions and custom ops into the file GRADVERIFY_RECORD names, then run the
sitecustomize this one hides, if there is one."""

import importlib.util
import os
import sys


def _record() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "_gradverify_record_probe", os.path.join(os.path.dirname(here), "probe.py")
    )
    if spec is None or spec.loader is None:
        return
    probe = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = probe
    spec.loader.exec_module(probe)
    probe.installed_from_environment()


def _chain() -> None:
    """Import the next sitecustomize on sys.path, as Python would have without this one."""
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        if ours is not None:
            sys.modules["sitecustomize"] = ours
    finally:
        sys.path[:] = saved


try:
    _record()
except Exception as error:  # a record must never stop the user's program
    print(f"gradverify record: cannot record in this process: {error}", file=sys.stderr)
_chain()
