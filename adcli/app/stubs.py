"""The rules module ``adcli export`` writes: finished imports, hand-write skeletons, ready tests.

Everything taken from a profile is data: names become identifiers only through ``_ident``
(letters, digits, underscores; never a keyword) and strings only through ``repr``.
"""

from __future__ import annotations

import keyword
import math
import re
import textwrap

import numpy as np

from ..advisor import HAND_WRITE, IMPORT
from ..advisor.choose import LIBRARY
from ..engine.descriptors import array_type, describe
from ..units import safe

_HEADER = '''"""Rules exported by adcli {version} from the profile named in PROFILE below.

Imports are finished code, restricted to the concrete types the profile saw; each is
verified against finite differences and adcli's derived rule when this module loads.
Hand-written rules are skeletons: the forward pass is filled in, the pullback is a TODO
that raises until you write it. Each rule has a test below: run them with pytest, or with
`adcli check THIS_FILE --profile PROFILE` (and `--script SCRIPT` for rules on the
profiled script's functions).

Use: `adcli profile --rules THIS_FILE SCRIPT`, or import this module before the code it
serves. Rules for functions of the profiled script are declared by name
("__main__:name"): `adcli profile` and `adcli check` make the script's functions
dispatch points (docs/rules.md); the tests define them with load_script(SCRIPT).
"""

{imports}
PROFILE = {source!r}
{script}'''


def _ident(text: str, taken: set) -> str:
    base = re.sub(r"[^0-9A-Za-z_]+", "_", text).strip("_") or "rule"
    if base[0].isdigit():
        base = "r_" + base
    if keyword.iskeyword(base):
        base += "_"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


_INT_DTYPES = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
               "u32": "uint32", "u64": "uint64", "b": "bool"}


def _example(desc: str, sample) -> str | None:
    """A Python expression for an argument of type ``desc``: the sample's shape when known.
    Containers (dict, list, tuple) are built from the sample's own structure; their keys are
    written as Python literals (repr), never as code."""
    if isinstance(sample, dict) and desc.startswith("dict"):
        if not all(type(k) in (str, int) for k in sample):
            return None
        parts = [_example(describe(v), v) for v in sample.values()]
        return None if None in parts else "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(sample, parts)) + "}"
    if isinstance(sample, (list, tuple)) and desc.startswith(("list", "tuple")):
        parts = [_example(describe(v), v) for v in sample]
        if None in parts:
            return None
        return f"[{', '.join(parts)}]" if isinstance(sample, list) else f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    t = array_type(desc)
    if t is not None and t.code in _INT_DTYPES:  # indices and masks: zeros are valid everywhere
        shape = tuple(int(n) for n in sample.shape) if isinstance(sample, np.ndarray) and sample.ndim == t.ndim \
            else (3,) * t.ndim
        return f"np.zeros({shape!r}, dtype=np.{_INT_DTYPES[t.code]})"
    if t is not None and t.code in ("f16", "f32", "f64"):
        dtype = {"f16": "np.float16", "f32": "np.float32", "f64": "np.float64"}[t.code]
        shape = tuple(int(n) for n in sample.shape) if isinstance(sample, np.ndarray) and sample.ndim == t.ndim \
            else (3,) * t.ndim
        expr = f"rng.standard_normal({shape!r}).astype({dtype})"
        if t.layout == "F":
            expr = f"np.asfortranarray({expr})"
        elif t.layout == "strided":
            big = tuple(2 * n for n in shape)
            expr = f"rng.standard_normal({big!r}).astype({dtype})[{', '.join(['::2'] * len(shape))}]"
        return expr
    if desc in ("float", "f64"):
        value = _float(float(sample) if isinstance(sample, (int, float, np.floating)) else 0.5)
        return value if desc == "float" else f"np.float64({value})"
    if desc == "int":
        return repr(int(sample)) if isinstance(sample, (int, np.integer)) else "1"
    if desc in ("bool", "None"):
        return repr(sample) if desc == "bool" and isinstance(sample, bool) else "None"
    return None


def _float(value: float) -> str:
    """A float as a Python expression: ``repr`` where that is a literal, ``float('nan')`` and
    ``float('inf')`` where it is not (a bare ``nan`` is a name error)."""
    return repr(value) if math.isfinite(value) else f"float({repr(value)!r})"


def rules_module(suggestions, samples: dict, targets: dict, source: str, version: str, script: str | None = None) -> str:
    """The module text. ``samples``: Signature -> list of sample argument values (or None).
    ``targets``: Signature -> (the expression naming its callable, or None; why not), from
    app/targets.py: nothing else from the profile becomes code.
    ``script``: the profiled script, relative to the module's folder, as the user named it
    (``adcli export --script``): the tests of rules on its functions load it."""
    out = []
    taken: set = {"np", "adcli", "check_rule"}
    for s in suggestions:
        if s.action not in (IMPORT, HAND_WRITE):
            continue
        sig = s.signature
        positional, keywords = list(sig.args), list(sig.kwargs)
        types = ", ".join(repr(d) for d in sig.key)
        target, why = targets[sig]
        is_user = s.tier != LIBRARY
        numpy_expr = None if is_user else target
        if target is None:
            out.append(f"\n# {s.rank}. {s.action} {safe(sig)}: not exported ({safe(why)})\n")
            continue
        ident = _ident(sig.qualname.rsplit(".", 1)[-1], taken)
        # comments carry profile text only escaped (safe: no character can end the comment line)
        why = textwrap.wrap(safe("; ".join(s.reasons[:2])), 84)
        out.append(f"\n\n# {s.rank}. {s.action}: {safe(sig)}\n" + "".join(f"# {line}\n" for line in why))
        # keyword arguments travel as **kw: their names (which may be a0, or a Python keyword)
        # never become identifiers in the generated code
        params = [f"a{i}" for i in range(len(positional))] + (["**kw"] if keywords else [])
        call_args = ", ".join(params)
        if s.action == IMPORT:
            out.append(f"adcli.rules.import_rule({numpy_expr}, {types})\n")
        else:
            forward = f"adcli.rules.original({target})" if is_user else numpy_expr
            cots = ", ".join(f"d_a{i}" for i in range(len(positional)))
            out.append(
                f"\n\n@adcli.rules.rule({target}, {types})\n"
                f"def {ident}_rule({', '.join(params)}):\n"
                f"    ans = {forward}({call_args})\n\n"
                f"    def pullback(g):\n"
                f"        # TODO: the cotangents ({cots}) of the arguments for the output cotangent g, each\n"
                f"        # with its argument's shape and dtype (None for one that is not differentiable),\n"
                f"        # or a thunk (lambda: ...) computed only when its argument is traced.\n"
                f"        raise NotImplementedError({('TODO: write the pullback of ' + str(sig))!r})\n\n"
                f"    return ans, pullback\n"
            )
        examples = [_example(d, v) for d, v in zip(positional, samples.get(sig) or [None] * len(positional))]
        call = f"adcli.rules.dispatch(adcli.rules.original({target}))" if is_user else numpy_expr
        out.append(f"\n\ndef test_{ident}():\n")
        if is_user and script:
            out.append("    load_script(SCRIPT)  # the script's functions, without its main block\n")
        if is_user and not script:  # the test below, once its script's functions are defined
            needed = f"the script defining {sig.target} is needed: re-export with --script SCRIPT"
            out.append(f"    # re-export with --script SCRIPT to run this test with pytest\n"
                       f"    raise NotImplementedError({needed!r})\n")
        if any(e is None for e in examples):
            missing = [d for d, e in zip(positional, examples) if e is None]
            out.append(f"    # no example input for {', '.join(missing)}: pass arguments of the recorded types\n"
                       f"    raise NotImplementedError({('example inputs needed for ' + str(sig))!r})\n")
        else:
            kw = ", ".join(f"{k!r}: {_example(d, None) or 'None'}" for k, d in keywords)
            uses_rng = any("rng." in e for e in examples)
            out.append(("    rng = np.random.default_rng(0)\n" if uses_rng else "") +
                       f"    args = ({', '.join(examples)}{',' if len(examples) == 1 else ''})\n"
                       f"    print(check_rule({call}, *args{', kwargs={' + kw + '}' if keywords else ''}))\n")
    body = "".join(out)
    # import only what the body uses, sorted as isort sorts (the standard library first): a
    # lint-clean module whatever was exported
    uses_script = "load_script(SCRIPT)" in body
    stdlib = ["import os"] if uses_script else []
    third = ["import adcli.rules"] + (["import numpy as np"] if "np." in body else []) + (
        ["from adcli.profiler import load_script"] if uses_script else []) + (
        ["from adcli.testing import check_rule"] if "check_rule(" in body else [])
    imports = "\n".join(stdlib) + ("\n\n" if stdlib else "") + "\n".join(third) + "\n"
    where = f"SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), {script!r})\n" if uses_script else ""
    header = _HEADER.format(version=version, source=source, imports=imports, script=where)
    return header + body
