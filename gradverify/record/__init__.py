"""`gradverify record -- COMMAND`: the calls of autograd Functions and custom ops in a real
run, written as spec cases.

probe.py (and site/sitecustomize.py, which loads it into the user's processes) records;
records.py reads what it wrote; cases.py turns a recorded call into a case's inputs;
shrink.py makes large shapes small while forward and backward still accept them; specs.py
writes or extends spec files; run.py runs the command and ties them together.
"""
