"""A stand-in for the ``autograd`` package that maps its public names onto adcli's reverse mode.

It exists only for running autograd's own test files against adcli (benchmarks/autograd_suite);
``run.py`` puts its directory first on ``sys.path`` inside the test subprocess, nowhere else.
Forward mode, higher-order operators, complex differentiation and autograd's internals raise
``ShimUnsupported`` naming the feature.
"""

from builtins import dict, isinstance, list, tuple, type  # noqa: F401  (autograd.builtins, read as Python's)

from ._adcli import (  # noqa: F401
    COMPLEX,
    FORWARD,
    HIGHER,
    INTERNALS,
    SHIM,
    checkpoint,
    elementwise_grad,
    grad,
    grad_and_aux,
    grad_named,
    jacobian,
    make_vjp,
    tensor_jacobian_product,
    unsupported,
    value_and_grad,
)

vector_jacobian_product = tensor_jacobian_product

deriv = unsupported(FORWARD, "autograd.deriv")
make_jvp = unsupported(FORWARD, "autograd.make_jvp")
make_jvp_reversemode = unsupported(FORWARD, "autograd.make_jvp_reversemode")
holomorphic_grad = unsupported(COMPLEX, "autograd.holomorphic_grad")
hessian = unsupported(HIGHER, "autograd.hessian")
make_hvp = unsupported(HIGHER, "autograd.make_hvp")
hessian_tensor_product = unsupported(HIGHER, "autograd.hessian_tensor_product")
hessian_vector_product = hessian_tensor_product
make_ggnvp = unsupported(HIGHER, "autograd.make_ggnvp")
multigrad_dict = unsupported(SHIM, "autograd.multigrad_dict")
primitive = unsupported(INTERNALS, "autograd.primitive (user-defined primitives)")
