"""A package whose backward passes are Triton kernels: `gradverify check` on it must find its
autograd.Function and its triton_op as it finds any other (tests/test_triton_examples.py)."""
