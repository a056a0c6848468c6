"""A package of kernel-style Functions for zero-config: one runs only in float32, one only on
CUDA (tests/checks/test_low_precision_inference.py)."""
