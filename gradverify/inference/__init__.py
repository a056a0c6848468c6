"""Inputs inferred from forward's signature: zero-config `check` and `init`."""
