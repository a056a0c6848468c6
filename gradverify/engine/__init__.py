"""One case: its inputs built and settled, its checks run in order, its findings folded."""
