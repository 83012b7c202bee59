"""The rules module ``adcli export`` writes: finished imports, hand-write skeletons, ready tests.

Everything taken from a profile is data: names become identifiers only through ``_ident``
(letters, digits, underscores; never a keyword) and strings only through ``repr``.
"""

from __future__ import annotations

import keyword
import math
import re
import textwrap
import unicodedata

import numpy as np

from ..advisor import HAND_WRITE, IMPORT
from ..advisor.choose import LIBRARY
from ..engine.descriptors import Parser, array_type, describe, is_float
from ..units import duration, safe

_HEADER = '''"""Rules exported by adcli {version} from the profile named in PROFILE below.

Imports are finished code, restricted to the concrete types the profile saw; each is
verified against finite differences and adcli's derived rule when this module loads.
Hand-write suggestions on the script's functions are synthesized where adcli can (with
--script): the forward pass and the pullback generated from the function's source and
verified on the profile's sample before they were written; edit them to optimise by hand.
The others are skeletons: the forward pass is filled in, the pullback is a TODO that says
what to return and raises until you write it. Each rule has a test below: run
them with pytest, or with `adcli check THIS_FILE --profile PROFILE` (and `--script SCRIPT`
for rules on the profiled script's functions).

Use: `adcli profile --rules THIS_FILE SCRIPT`, or import this module before the code it
serves. Rules for functions of the profiled script are declared by name
("__main__:name"): `adcli profile` and `adcli check` make the script's functions
dispatch points (docs/rules.md); the tests define them with load_script(SCRIPT), its
definitions without its main block.
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


# names the skeleton's own code uses: a parameter of the same name is renamed (``g`` -> ``g_``)
_RESERVED = frozenset({"ans", "pullback", "g", "kw", "np", "adcli", "os", "check_rule", "load_script", "SCRIPT",
                       "PROFILE", "rng", "args"})


def _params(names, n: int) -> list:
    """The rule's parameter names: the function's own (``theta, x0``) when ``names`` gives ``n``
    distinct identifiers, each written as Python reads it (no keyword, NFKC-normal), else
    ``a0, a1, ...``. A name the skeleton uses itself gets a trailing ``_``."""
    def ok(x) -> bool:
        return isinstance(x, str) and x.isidentifier() and not keyword.iskeyword(x) and \
            unicodedata.normalize("NFKC", x) == x
    if not isinstance(names, (list, tuple)) or len(names) != n or not all(ok(x) for x in names) or len(set(names)) != n:
        return [f"a{i}" for i in range(n)]
    out: list = []
    for name in names:
        while name in _RESERVED or name in out or name in names[len(out) + 1:]:
            name += "_"
        out.append(name)
    return out


def _entries(desc: str):
    """A container descriptor's kind and entries, ``("dict", [("'W'", "f64[2d]"), ...], 0)`` (the
    keys as ``repr`` writes them; the last number: entries the descriptor leaves out), or None
    for a leaf."""
    p = Parser(desc)
    if desc.startswith("dict{"):
        p.i, out = 5, []
        while p.peek() not in ("}", ""):
            key = p.key()
            p.expect(":")
            start = p.i
            p.descriptor()
            bare = key.isidentifier() and not keyword.iskeyword(key)  # ``means`` is the key 'means'
            out.append((repr(key) if bare else key, desc[start:p.i].strip()))
            p.take(",")
        return "dict", out, 0
    m = re.match(r"(list|tuple|[\w.]+\.\w+)\(", desc)
    if m is None or desc.startswith(("obj(", "fn(", "type(")):
        return None
    p.i, items, more = m.end(), [], 0
    while p.peek() not in (")", ""):
        start = p.i
        p.descriptor()
        items.append(desc[start:p.i].strip())
        if p.take("*"):
            count = re.compile(r"\s*(\d+)").match(desc, p.i)
            p.i = count.end()
            items += items[-1:] * (int(count.group(1)) - 1)
        elif p.take(","):
            tail = re.compile(r"\s*\.\.\.(\d+) more").match(desc, p.i)
            if tail is not None:
                more, p.i = int(tail.group(1)), tail.end()
    kind = "list" if m.group(1) == "list" else "tuple"
    return kind, [(f"{i}", d) for i, d in enumerate(items)], more


def _leaf(desc: str, path: str) -> str | None:
    """What the cotangent of a leaf is: an array like it, a float, or None."""
    if array_type(desc) is not None and (is_float(desc) or desc.startswith("c")):
        return f"an array shaped like {path}"
    if desc in ("float", "f16", "f32", "f64", "f128"):
        return "a float"
    return None


def cotangent_text(desc: str, path: str) -> str:
    """The cotangent an argument of type ``desc`` (named ``path``) takes, in words: "a dict
    with keys 'W', 'b' of arrays shaped like params['W'], params['b']"."""
    parts = _entries(desc)
    if parts is None:
        return _leaf(desc, path) or "None (not differentiable)"
    kind, entries, more = parts
    paths = [f"{path}[{k}]" for k, _ in entries]
    what = f"a dict with keys {', '.join(k for k, _ in entries)} of" if kind == "dict" else \
        f"a {kind} (or {'tuple' if kind == 'list' else 'list'}) of {len(entries) + more}"
    if entries and all(_entries(d) is None and _leaf(d, "") == "an array shaped like " for _, d in entries):
        shown = paths if len(paths) <= 8 or kind == "dict" else paths[:3] + ["...", paths[-1]]
        rest = f" and {more} more like them" if more else ""
        return f"{what} arrays shaped like {', '.join(shown)}{rest}"
    what = what.removesuffix(" of") if kind == "dict" else what
    inner = [f"[{k}] {cotangent_text(d, p)}" for (k, d), p in zip(entries, paths)]
    return f"{what}: " + "; ".join(inner) + (f"; and {more} more" if more else "")


_INT_DTYPES = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
               "u32": "uint32", "u64": "uint64", "b": "bool"}


_RANDOM = {"obj(numpy.random.Generator)": "np.random.default_rng(0)",
           "obj(numpy.random.RandomState)": "np.random.RandomState(0)"}


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
    if desc in _RANDOM:  # a seeded generator: check_rule restores it before every call
        return _RANDOM[desc]
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


def rules_module(suggestions, samples: dict, targets: dict, source: str, version: str, script: str | None = None,
                 names: dict | None = None, missing: str | None = None, synthesized: dict | None = None) -> str:
    """The module text. ``samples``: Signature -> list of sample argument values (or None).
    ``targets``: Signature -> (the expression naming its callable, or None; why not), from
    app/targets.py: nothing else from the profile becomes code. ``names``: Signature -> the
    function's parameter names (app/targets.py ``parameters``; checked here again: a name that is
    not an identifier gives ``a0, a1, ...``).
    ``script``: the profiled script, relative to the module's folder (``--script``, or the one
    the profile records when that file defines the functions): the tests of rules on its
    functions load it. ``missing``: the script the profile records when no such file was found
    (text from the profile: written only inside a string literal, by repr). ``synthesized``:
    Signature -> app/synthesis.py's outcome for a hand-write target: its verified rule's text
    (generated from the user's own file, never from the profile), or why it is a skeleton."""
    out = []
    taken: set = {"np", "adcli", "check_rule"}
    generated_imports: set = set()
    bindings: set = set()
    for s in suggestions:
        if s.action not in (IMPORT, HAND_WRITE):
            continue
        sig = s.signature
        target, why = targets[sig]
        if target is None:
            out.append(f"\n# {s.rank}. {s.action} {safe(sig)}: not exported ({safe(why)})\n")
            continue
        ident = _ident(sig.qualname.rsplit(".", 1)[-1], taken)
        # comments carry profile text only escaped (safe: no character can end the comment line)
        why = textwrap.wrap(safe("; ".join(s.reasons[:2])), 84)
        out.append(f"\n\n# {s.rank}. {s.action}: {safe(sig)}\n" + "".join(f"# {line}\n" for line in why))
        is_user = s.tier != LIBRARY
        done = (synthesized or {}).get(sig)
        if s.action == IMPORT:
            out.append(f"adcli.rules.import_rule({target}, {', '.join(repr(d) for d in sig.key)})\n")
        elif done is not None and done.synthesis is not None:
            head, binds, functions = done.synthesis.parts(f"{ident}_fwd", f"{ident}_pullback")
            generated_imports.update(line for line in head if line.startswith(("import ", "from ")))
            bindings.update(binds)
            program = done.synthesis.program
            measured = s.synthesized_saving_s
            timed = "" if measured is None else \
                f" In the profiled program it saved {duration(measured)} per run (measured)." if measured > 0 else \
                f" In the profiled program it was {duration(-measured)} per run SLOWER than the derived rule " \
                f"(measured): optimise it by hand before you use it, or keep the derived rule."
            note = f"Synthesized by adcli from {program.file}:{program.offset + 1} and verified on the profile's " \
                f"sample ({', '.join(done.checks)}).{timed} Generated code: optimise it by hand if you like, then " \
                f"run its test below or `adcli check`."
            wrt = done.synthesis.argnums
            if wrt is not None:
                note += f" It differentiates the arguments the profiled run traced ({', '.join(map(str, wrt))}): " \
                    "a call that traces another is an error, never a zero gradient."
            out.append("".join(f"# {line}\n" for line in textwrap.wrap(safe(note), 96)) + f"\n\n{functions}\n\n"
                       f"adcli.synth.declare({target}, ({', '.join(repr(d) for d in sig.key)},), {ident}_fwd, "
                       f"{ident}_pullback{'' if wrt is None else f', wrt={wrt!r}'})\n")
        else:
            if done is not None and done.reason:
                out += [f"# {line}\n" for line in textwrap.wrap(safe(done.reason), 96)]
            out.append(_skeleton(sig, target, is_user, ident, (names or {}).get(sig)))
        wrt = done.synthesis.argnums if done is not None and done.synthesis is not None else None
        out.append(_test(sig, target, is_user, ident, samples.get(sig), script, missing, wrt))
    body = "".join(out)
    # import only what the body uses, sorted as isort sorts (the standard library first): a
    # lint-clean module whatever was exported; NumPy always with a skeleton (its pullback needs it)
    uses_script = "load_script(SCRIPT)" in body
    stdlib = ["import os"] if uses_script else []
    numpy = [] if "np." not in body and "def pullback(g)" not in body else \
        ["import numpy as np" + ("" if "np." in body else "  # noqa: F401 - for the pullbacks you write")]
    plain = ["import adcli.rules"] + (["import adcli.synth"] if "adcli.synth.declare(" in body else []) + numpy
    plain += [line for line in generated_imports if line.startswith("import ")]
    froms = (["from adcli.profiler import load_script"] if uses_script else []) + (
        ["from adcli.testing import check_rule"] if "check_rule(" in body else [])
    froms += [line for line in generated_imports if line.startswith("from ")]
    third = sorted(set(plain), key=_isort) + sorted(set(froms), key=_isort)
    imports = "\n".join(stdlib) + ("\n\n" if stdlib else "") + "\n".join(third) + "\n"
    if bindings:  # the registry's VJPs the synthesized rules call
        imports += "\n" + "\n".join(sorted(bindings)) + "\n"
    where = f"SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), {script!r})\n" if uses_script else ""
    header = _HEADER.format(version=version, source=source, imports=imports, script=where)
    return header + body


def _isort(line: str) -> tuple:
    """isort's order within a section: by module, case-insensitively (``import numpy as _np``
    before ``import numpy as np``)."""
    module = line.split()[1]
    return module.lower(), line


def _skeleton(sig, target: str, is_user: bool, ident: str, names) -> str:
    """A hand-write rule: the forward pass filled in, the pullback a TODO saying what to return."""
    positional, keywords = list(sig.args), list(sig.kwargs)
    # keyword arguments travel as **kw: their names (which may be a0, or a Python keyword)
    # never become identifiers in the generated code
    args = _params(names, len(positional))
    params = args + (["**kw"] if keywords else [])
    forward = f"adcli.rules.original({target})" if is_user else target
    # what each cotangent is, from the types the profile recorded (dict keys by repr, escaped)
    lines = [f"d_{a}: {cotangent_text(d, a)}" for a, d in zip(args, positional)]
    returned = [f"d_{a}" if _differentiable(d) else "None" for a, d in zip(args, positional)]
    todo = ["TODO: return the cotangents of the arguments for the output cotangent g:"]
    for line in lines:
        todo += textwrap.wrap(safe(line), 92, initial_indent="  ", subsequent_indent="      ")
    todo += ["each with its argument's dtype, or a thunk (lambda: ...) computed only when its",
             "argument is traced:",
             f"  return {', '.join(returned)}{',' if len(returned) == 1 else ''}"]
    comment = "".join(f"        # {t}\n" for t in todo)
    return (f"\n\n@adcli.rules.rule({target}, {', '.join(repr(d) for d in sig.key)})\n"
            f"def {ident}_rule({', '.join(params)}):\n"
            f"    ans = {forward}({', '.join(params)})\n\n"
            f"    def pullback(g):\n"
            f"{comment}"
            f"        raise NotImplementedError({('TODO: write the pullback of ' + str(sig))!r})\n\n"
            f"    return ans, pullback\n")


def _differentiable(desc: str) -> bool:
    parts = _entries(desc)
    return _leaf(desc, "") is not None if parts is None else any(_differentiable(d) for _, d in parts[1])


def _test(sig, target: str, is_user: bool, ident: str, sample, script: str | None, missing: str | None,
          wrt: tuple | None = None) -> str:
    """The rule's test: check_rule on example inputs shaped like the profile's sample (for the
    arguments ``wrt``, a synthesized rule's, if given)."""
    positional, keywords = list(sig.args), list(sig.kwargs)
    examples = [_example(d, v) for d, v in zip(positional, sample or [None] * len(positional))]
    call = f"adcli.rules.dispatch(adcli.rules.original({target}))" if is_user else target
    out = [f"\n\ndef test_{ident}():\n"]
    if is_user and script:
        out.append("    load_script(SCRIPT)  # the script's functions, without its main block\n")
    elif is_user:  # the test below, once its script's functions are defined
        recorded = f"the profile records {missing!r}, which was not found when this module was exported" \
            if missing else "the profile records no script"
        needed = f"the script defining {sig.target} is needed ({recorded}): export again with --script SCRIPT"
        out.append(f"    # export again with --script SCRIPT to run this test with pytest\n"
                   f"    raise NotImplementedError({needed!r})\n")
    if any(e is None for e in examples):
        missing_types = [d for d, e in zip(positional, examples) if e is None]
        out.append(f"    # no example input for {', '.join(missing_types)}: pass arguments of the recorded types\n"
                   f"    raise NotImplementedError({('example inputs needed for ' + str(sig))!r})\n")
    else:
        kw = ", ".join(f"{k!r}: {_example(d, None) or 'None'}" for k, d in keywords)
        uses_rng = any("rng." in e for e in examples)
        out.append(("    rng = np.random.default_rng(0)\n" if uses_rng else "") +
                   f"    args = ({', '.join(examples)}{',' if len(examples) == 1 else ''})\n"
                   f"    print(check_rule({call}, *args{', kwargs={' + kw + '}' if keywords else ''}"
                   f"{'' if wrt is None else f', argnums={wrt!r}'}))\n")
    return "".join(out)
