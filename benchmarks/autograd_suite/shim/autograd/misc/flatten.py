"""autograd.misc.flatten, out of scope."""

from .._adcli import INTERNALS, unsupported

flatten = unsupported(INTERNALS, "autograd.misc.flatten")
