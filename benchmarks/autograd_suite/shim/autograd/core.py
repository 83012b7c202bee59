"""autograd.core: autograd's tracing machinery, out of scope; each name raises when used."""

from ._adcli import INTERNALS, unsupported


class _Registry:
    """Stands for autograd's rule registries (primitive_vjps, ...): any use raises."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        return unsupported(INTERNALS, f"autograd.core.{self._name}")


make_vjp = unsupported(INTERNALS, "autograd.core.make_vjp")
make_jvp = unsupported(INTERNALS, "autograd.core.make_jvp")
vspace = unsupported(INTERNALS, "autograd.core.vspace")
primitive = unsupported(INTERNALS, "autograd.core.primitive")
defvjp = unsupported(INTERNALS, "autograd.core.defvjp")
primitive_vjps = _Registry("primitive_vjps")
primitive_jvps = _Registry("primitive_jvps")
