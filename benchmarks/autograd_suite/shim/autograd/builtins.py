"""autograd.builtins: its container types and isinstance, read as Python's own (adcli needs no
boxed containers: a tuple of tracers is a pytree)."""

from builtins import dict, isinstance, list, tuple, type  # noqa: F401
