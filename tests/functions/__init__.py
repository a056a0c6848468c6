"""Real autograd Functions used as test fixtures, each correct or carrying one bug class."""
