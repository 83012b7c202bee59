"""autograd.extend: defining primitives and rules, out of scope; each name raises when used."""

from ._adcli import INTERNALS, unsupported

primitive = unsupported(INTERNALS, "autograd.extend.primitive")
defvjp = unsupported(INTERNALS, "autograd.extend.defvjp")
defvjp_argnum = unsupported(INTERNALS, "autograd.extend.defvjp_argnum")
defjvp = unsupported(INTERNALS, "autograd.extend.defjvp")
defjvp_argnum = unsupported(INTERNALS, "autograd.extend.defjvp_argnum")
def_linear = unsupported(INTERNALS, "autograd.extend.def_linear")
vspace = unsupported(INTERNALS, "autograd.extend.vspace")
notrace_primitive = unsupported(INTERNALS, "autograd.extend.notrace_primitive")
