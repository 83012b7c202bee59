"""Every kind of tape node the package defines: the pullbacks (functions named ``pb_*`` or
``_pb_*``) of every adcli module, for the tests that each kind declares what it must."""

import importlib
import inspect
import pkgutil

import adcli


def pullback_kinds() -> list:
    kinds = []
    for info in pkgutil.walk_packages(adcli.__path__, "adcli."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, fn in vars(module).items():
            if inspect.isfunction(fn) and fn.__module__ == info.name and name.lstrip("_").startswith("pb_"):
                kinds.append(fn)
    return kinds
