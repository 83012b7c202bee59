"""autograd.tracer: ``isbox`` means 'is an adcli tracer'; the rest is out of scope."""

from ._adcli import INTERNALS, isbox, unsupported  # noqa: F401

primitive = unsupported(INTERNALS, "autograd.tracer.primitive")
notrace_primitive = unsupported(INTERNALS, "autograd.tracer.notrace_primitive")
getval = unsupported(INTERNALS, "autograd.tracer.getval")
