"""Numerical methods below the checks: they know nothing of cases, checks or results."""
