"""`gradverify record -- COMMAND`: the calls of autograd Functions and custom ops in a real
run, written as spec cases.

probe.py (and site/sitecustomize.py, which loads it into the user's processes) records;
records.py reads what it wrote; summary.py groups the calls into few cases and tells the
run's constants; cases.py turns a recorded call into a case's inputs (readable.py writes
its numbers); shrink.py makes large shapes small while forward and backward still accept
them; variants.py adds what the run did not show; specs.py writes or extends spec files;
run.py runs the command (prewarm.py importing what the specs need while it runs) and ties
them together.
"""
