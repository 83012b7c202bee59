"""What a rule ``adcli check`` is given would serve, and why not: the function a rule for a user
function names, and whether the profiled program calls the rule's signature.

A check says OK only for a rule that served every checked call. Before anything is called,
these say why a rule cannot: its target is not found (its module is not imported, or is
imported under another name, or does not define it), the name leads to a function defined
under another name (a re-export), or the profile's program calls the function with another
signature or through another module name. Names are compared as text and looked up among the
modules already imported (by the script, the rules file or --module files): nothing is
imported or called here.
"""

from __future__ import annotations

import difflib
import sys

from ..errors import AdcliError
from ..rules.dispatch import original


def find_target(rule, script: str | None):
    """``(function, "")`` for the function a rule names, or ``(None, why it cannot serve)``.
    A NumPy target is itself."""
    if not isinstance(rule.target, tuple):
        return rule.target, ""
    module_name, qualname = rule.target
    try:
        func = original(rule.signature.target)
    except AdcliError:
        return None, f"target not found: {_why_missing(module_name, qualname, script)}"
    found = (getattr(func, "__module__", None), getattr(func, "__qualname__", None))
    if found != rule.target:
        return None, (f"module imported under another name: {rule.signature.target} is the function "
                      f"{found[0]}:{found[1]}, whose calls only a rule declared for {found[0]}:{found[1]!s} serves")
    return func, ""


def _why_missing(module_name: str, qualname: str, script: str | None) -> str:
    if module_name == "__main__" and script is None:  # (the running __main__ is adcli's own entry point)
        return "the rule is for a function of the profiled script: pass --script SCRIPT to load its functions"
    module = sys.modules.get(module_name)
    if module is not None:
        where = getattr(module, "__file__", None)
        if "<locals>" in qualname:  # a closure no module value keeps
            return (f"{module_name}{f' ({where})' if where else ''} keeps no {qualname}: a closure is found at the "
                    "program's call site, with --profile PROFILE (its signature) and --script SCRIPT (the program)")
        return f"{module_name}{f' ({where})' if where else ''} does not define {qualname}"
    if module_name == "__main__":
        return f"{script} does not define {qualname}"
    others = sorted(name for name, m in list(sys.modules.items())
                    if m is not None and _same_module_name(name, module_name) and _defines(m, qualname))
    if others:
        return (f"{module_name} is not imported, but {', '.join(others)} is and defines {qualname}: the program "
                f"imports the module under another name; declare the rule for '{others[0]}:{qualname}'")
    by = f"neither {script} nor the rules file imports it" if script else \
        "the rules file does not import it; pass --script SCRIPT, the program that imports it"
    close = [m for m in difflib.get_close_matches(module_name, list(sys.modules), n=5, cutoff=0.8)
             if sys.modules.get(m) is not None and _defines(sys.modules[m], qualname)]
    return f"the module {module_name} is not imported ({by})" + (f"; did you mean {close[0]}?" if close else "")


def _same_module_name(name: str, wanted: str) -> bool:
    """Whether module ``name`` could be the file ``wanted`` names, imported by another path
    (``pkg.port_helpers`` for ``port_helpers``, or the reverse)."""
    return name != wanted and (name.endswith("." + wanted) or wanted.endswith("." + name)
                               or name.rsplit(".", 1)[-1] == wanted.rsplit(".", 1)[-1])


def _defines(module, qualname: str) -> bool:
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return callable(obj)


def profile_mismatch(rule, profile) -> str:
    """Why the profiled program would not call ``rule`` (its signature is not in the profile, but
    the function is, with other types or under another module name), or "" when the profile says
    nothing either way."""
    sig = rule.signature
    same = [s.signature for s in profile.signatures if s.signature.qualname == sig.qualname]
    if any(s == sig for s in same):
        return ""
    exact = [s for s in same if s.module == sig.module]
    if exact:
        return (f"signature mismatch: the program calls {_listed(exact)}, the rule is declared for {sig} (types and "
                "keyword arguments must match exactly)")
    moved = [s for s in same if _same_module_name(s.module, sig.module)]
    if moved:
        return (f"module imported under another name: the program calls {_listed(moved)}, the rule is declared for "
                f"{sig.target}: declare it for '{moved[0].target}'")
    return ""


def _listed(signatures: list) -> str:
    shown = ", ".join(str(s) for s in signatures[:3])
    return shown + (f" and {len(signatures) - 3} more" if len(signatures) > 3 else "")


def nearest_checkable(profile, sig) -> str:
    """The nearest caller of ``sig`` in the profile's call tree that ``check`` can run on the
    recorded samples alone (a module-level function of the user's, every argument recorded),
    as text, or "" when there is none (or no profile)."""
    if profile is None:
        return ""
    by_id = {s.id: s for s in profile.signatures}
    stack, best = [(profile.tree, ())], None
    while stack:
        node, above = stack.pop()
        here = by_id.get(node.sig)
        if here is not None and here.signature == sig:
            for s in reversed(above):
                if _checkable(s) and (best is None or len(above) - above.index(s) < best[0]):
                    best = (len(above) - above.index(s), s)
                    break
            continue
        stack.extend((c, above + ((here,) if here is not None else ())) for c in node.children)
    return str(best[1].signature) if best else ""


def _checkable(stats) -> bool:
    s = stats.signature
    return (stats.kind == "user" and "." not in s.qualname and stats.sample is not None
            and all(_recorded(e) for e in [*stats.sample.args, *stats.sample.kwargs.values()]))


def _recorded(entry) -> bool:
    """Whether an encoded sample value was recorded whole (no part left out as unsupported)."""
    stack = [entry]
    while stack:
        e = stack.pop()
        if not isinstance(e, dict) or "unsupported" in e:
            return False
        for kind in ("list", "tuple"):
            stack.extend(e.get(kind, ()))
        stack.extend(e.get("dict", {}).values())
    return True
