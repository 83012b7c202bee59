"""autograd.misc.optimizers, out of scope; each name raises when used."""

from .._adcli import INTERNALS, unsupported

sgd = unsupported(INTERNALS, "autograd.misc.optimizers.sgd")
rmsprop = unsupported(INTERNALS, "autograd.misc.optimizers.rmsprop")
adam = unsupported(INTERNALS, "autograd.misc.optimizers.adam")
