"""The profile: plain, versioned data (docs/profile-format.md), saved as JSON + a sidecar .npz.

Loading never executes code: the JSON is parsed and validated field by field, and the sample
arrays are read with ``np.load(..., allow_pickle=False)``. Signatures and names are strings.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from typing import Any

import numpy as np

from ..errors import AdcliError

SCHEMA = "adcli-profile"
VERSION = 1


class ProfileError(AdcliError):
    """A profile file is missing, corrupt, truncated, foreign, or from a newer adcli."""


def build(session, meta: dict) -> dict:
    """The profile of everything ``session`` measured, as JSON-ready data (samples separate)."""
    from .session import CallNode

    stats: dict = {}

    def visit(node: CallNode, open_sigs: frozenset) -> tuple:
        # returns inclusive (fwd, rev, prims, fa, fb, ra, rb) of this node's subtree
        rev, prims = node.rev, node.prims
        fa, fb, ra, rb = node.fwd_allocs, node.fwd_bytes, node.rev_allocs, node.rev_bytes
        child_fwd = 0.0
        kids = []
        inner = open_sigs | {node.sig.id}
        for child in node.children.values():
            sub = visit(child, inner)
            kids.append(sub[-1])
            child_fwd += child.fwd
            rev += sub[1]
            prims += sub[2]
            fa, fb, ra, rb = fa + sub[3], fb + sub[4], ra + sub[5], rb + sub[6]
        fwd = node.fwd if node.parent is not None else sum(c.fwd for c in node.children.values())
        tree = {
            "sig": node.sig.id, "calls": node.calls,
            "forward_s": fwd, "self_forward_s": max(fwd - child_fwd, 0.0),
            "reverse_s": rev, "self_reverse_s": node.rev,
            "primitives": prims, "self_primitives": node.prims,
            "allocs": {"forward": [fa, fb], "reverse": [ra, rb]},
            "self_allocs": {"forward": [node.fwd_allocs, node.fwd_bytes], "reverse": [node.rev_allocs, node.rev_bytes]},
            "children": kids,
        }
        if node.parent is not None:
            s = stats.setdefault(node.sig.id, _zero())
            s["calls"] += node.calls
            s["self_forward_s"] += tree["self_forward_s"]
            s["self_reverse_s"] += node.rev
            s["self_primitives"] += node.prims
            for k in ("forward", "reverse"):
                s["self_allocs"][k] = [a + b for a, b in zip(s["self_allocs"][k], tree["self_allocs"][k])]
            if node.sig.id not in open_sigs:  # outermost occurrence: inclusive totals count once
                s["forward_s"] += fwd
                s["reverse_s"] += rev
                s["primitives"] += prims
                s["allocs"]["forward"] = [s["allocs"]["forward"][0] + fa, s["allocs"]["forward"][1] + fb]
                s["allocs"]["reverse"] = [s["allocs"]["reverse"][0] + ra, s["allocs"]["reverse"][1] + rb]
        return fwd, rev, prims, fa, fb, ra, rb, tree

    tree = visit(session.root, frozenset())[-1]
    signatures = []
    for sig_id, s in sorted(stats.items()):
        sig = session.by_id[sig_id]
        served = dict(sig.served)
        signatures.append({
            "id": sig_id, "signature": str(sig.signature), "function": sig.signature.function, "kind": sig.kind,
            "served_by": max(served, key=served.get) if served else "derived", "served_counts": served,
            "location": sig.location, **s, "replay": None, "sample": None,
        })
    total_grad = session.forward_s + session.reverse_s
    return {
        "schema": SCHEMA, "version": VERSION, **meta,
        "totals": {"gradients": session.gradients, "forward_s": session.forward_s, "reverse_s": session.reverse_s,
                   "gradient_s": total_grad},
        "signatures": signatures,
        "tree": tree,
    }


def _zero() -> dict:
    return {"calls": 0, "forward_s": 0.0, "self_forward_s": 0.0, "reverse_s": 0.0, "self_reverse_s": 0.0,
            "primitives": 0, "self_primitives": 0,
            "allocs": {"forward": [0, 0], "reverse": [0, 0]}, "self_allocs": {"forward": [0, 0], "reverse": [0, 0]}}


# --- files ---------------------------------------------------------------------------------


def sidecar(path: str) -> str:
    root, _ = os.path.splitext(path)
    return root + ".npz"


def save(profile: dict, path: str, samples: dict) -> None:
    """Write ``path`` (JSON) and its ``.npz`` of sample arrays, each atomically (a temporary file
    in the same folder, then a rename): a reader never sees a half-written profile."""
    folder = os.path.dirname(os.path.abspath(path))
    _atomic(sidecar(path), folder, lambda f: np.savez_compressed(f, **samples), binary=True)
    _atomic(path, folder, lambda f: f.write(json.dumps(profile, indent=1, sort_keys=False, default=_json_default)))


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _atomic(path: str, folder: str, write, binary: bool = False) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".adcli-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_writable(path: str) -> None:
    """Fail before running anything if ``path`` cannot be written."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(folder):
        raise ProfileError(f"cannot write {path}: folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".adcli-", dir=folder)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise ProfileError(f"cannot write {path}: {exc.strerror or exc}") from None
    if os.path.isdir(path):
        raise ProfileError(f"cannot write {path}: it is a folder")


_REQUIRED = {"schema": str, "version": int, "totals": dict, "signatures": list, "tree": dict}
_SIG_FIELDS = {"id": int, "signature": str, "function": str, "kind": str, "served_by": str, "calls": int,
               "forward_s": (int, float), "reverse_s": (int, float), "self_forward_s": (int, float),
               "self_reverse_s": (int, float), "primitives": int, "allocs": dict}


def load(path: str) -> dict:
    """Read and validate a profile (the JSON only; see load_samples). Raises ProfileError."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ProfileError(f"no profile at {path} (run `adcli profile SCRIPT` first)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # a file cut short ends without closing its outermost object
        what = "truncated" if not text.rstrip().endswith("}") else "corrupt"
        raise ProfileError(f"{path} is not a valid profile ({what} JSON at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise ProfileError(f"{path} is not a valid profile (nested too deeply)") from None
    return validate(data, path)


def validate(data: Any, path: str = "profile") -> dict:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ProfileError(f"{path} is not an adcli profile (no 'schema': '{SCHEMA}' field)")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ProfileError(f"{path}: 'version' must be a positive integer")
    if version > VERSION:
        raise ProfileError(f"{path} was written by a newer adcli (profile format {version}; this adcli reads up to {VERSION})")
    for key, kind in _REQUIRED.items():
        if not isinstance(data.get(key), kind):
            raise ProfileError(f"{path}: field {key!r} is missing or not a {kind.__name__}")
    for key in ("gradients", "forward_s", "reverse_s", "gradient_s"):
        if not _number(data["totals"].get(key)):
            raise ProfileError(f"{path}: totals.{key} is missing or not a number")
    if not isinstance(data.get("partial", False), bool):
        raise ProfileError(f"{path}: 'partial' must be true or false")
    ids = set()
    for i, s in enumerate(data["signatures"]):
        if not isinstance(s, dict):
            raise ProfileError(f"{path}: signatures[{i}] is not an object")
        for key, kind in _SIG_FIELDS.items():
            if not isinstance(s.get(key), kind) or isinstance(s.get(key), bool):
                raise ProfileError(f"{path}: signatures[{i}].{key} is missing or has the wrong type")
        for key in ("allocs", "self_allocs"):
            a = s.get(key, {"forward": [0, 0], "reverse": [0, 0]})
            if not (isinstance(a, dict) and all(_pair(a.get(k)) for k in ("forward", "reverse"))):
                raise ProfileError(f"{path}: signatures[{i}].{key} must hold forward and reverse [count, bytes] pairs")
        for key in ("replay", "sample"):
            if s.get(key) is not None and not isinstance(s[key], dict):
                raise ProfileError(f"{path}: signatures[{i}].{key} must be an object or null")
        ids.add(s["id"])
    _check_tree(data["tree"], ids | {0}, path)
    return data


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _pair(x) -> bool:
    return isinstance(x, list) and len(x) == 2 and all(_number(v) for v in x)


def _check_tree(root, ids, path):
    stack = [root]  # iterative: a deep (or hostile) tree must not exhaust Python's stack
    while stack:
        node = stack.pop()
        if not isinstance(node, dict) or node.get("sig") not in ids or not isinstance(node.get("children"), list):
            raise ProfileError(f"{path}: the call tree is malformed")
        stack.extend(node["children"])


def load_samples(path: str) -> dict:
    """The sample arrays of a profile, without unpickling anything."""
    npz = sidecar(path)
    if not os.path.exists(npz):
        return {}
    try:
        with np.load(npz, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ProfileError(f"cannot read the sample inputs {npz}: {exc}") from None
