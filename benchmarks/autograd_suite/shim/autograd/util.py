"""autograd.util, out of scope; each name raises when used."""

from ._adcli import INTERNALS, unsupported

quick_grad_check = unsupported(INTERNALS, "autograd.util.quick_grad_check")
subvals = unsupported(INTERNALS, "autograd.util.subvals")
