"""Trying guesses: the search for a base assignment (guesses), the probe that runs forward
and backward on one (probe), what a slice that comes out empty says (emptied), the rules
hooked into every guess (reach) and the precision a kernel runs in (precision).

Importing this package never imports torch.
"""
