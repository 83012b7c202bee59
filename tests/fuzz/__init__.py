"""adcli's differential fuzzer: random NumPy programs run with NumPy and under adcli.

``grammar.generate(seed)`` makes a program, ``oracle.run(program)`` classifies it (ok, refused,
wrong-value, wrong-gradient, crash, ...), ``shrink.shrink`` reduces a failure to a minimal
reproduction, and ``python -m tests.fuzz`` runs a campaign. See tests/fuzz/findings/README.md.
"""
