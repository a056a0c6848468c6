"""A package with three files named lowlevel.py, as pytorch-wavelets has: a crash must be
located by a path that says which one."""
