"""autograd.misc, out of scope; each name raises when used."""

from .._adcli import INTERNALS, unsupported

const_graph = unsupported(INTERNALS, "autograd.misc.const_graph")
flatten = unsupported(INTERNALS, "autograd.misc.flatten")
