"""Bundled torch.autograd.Function examples for the demo specs, correct and seeded-buggy."""
