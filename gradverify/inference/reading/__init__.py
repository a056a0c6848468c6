"""What a Function's code says, read without running it: its source and dataflow, its
docstrings, annotations and comments, the call sites and callers in its package, the
contract each parameter states, and the intent its words declare. Readers sit below the
rules and the search that use them, and never import either (pyproject's contracts).

Importing this package never imports torch.
"""
