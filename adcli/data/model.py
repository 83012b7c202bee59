"""The profile as typed data (docs/profile-format.md): what ``adcli profile`` measured.

Every reader (the advisor, the renderers, export, check, compare) gets these objects, never the
JSON: :meth:`Profile.from_json` is the one place a profile document is read and validated,
field by field, and :meth:`Profile.to_json` the one place it is written. A profile is untrusted
data (users share them): validation accepts only the types below, signature text only through
:meth:`Signature.parse`, and never executes or imports anything.

Version 2 is written. Version 1 files are read: their import trials' ``agrees`` flag becomes an
:class:`ImportOutcome`, ``direct_bytes_estimate`` becomes ``direct_bytes``, and ``max_rel_diff``
(never filled) is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine.signature import Signature
from ..units import safe
from .records import (
    DECOMPOSITION,
    Allocs,
    CallTree,
    ImportOutcome,
    ImportTrial,
    Replay,
    Sample,
    SignatureStats,
    Totals,
)
from .samples import malformed
from .schema import (
    CHECKS,
    KIND_NAMES,
    KINDS,
    MAX_COUNT,
    MAX_NESTING,
    OUTPUTS,
    REPLAYS,
    SCHEMA,
    SOURCES,
    VERSION,
    ProfileError,
    Signed,
    is_count,
    is_int,
    is_pair,
    nesting,
)

# Signatures the replay budget left out make a profile incomplete when their share of the gradient
# time is above this: the smallest of a program's signatures (the replays go largest first) leave
# the advice on the others whole, and a note names them (profiler/api.py).
UNREPLAYED_SHARE = 0.05


@dataclass
class Profile:
    """Everything ``adcli profile`` measured in one run of a program."""

    totals: Totals
    signatures: list[SignatureStats]
    tree: CallTree
    command: list = field(default_factory=list)
    created: str = ""
    adcli_version: str = ""
    python: str = ""
    numpy: str = ""
    platform: str = ""
    partial: bool = False
    exit_status: int = 0
    replay_s: float = 0.0
    pair: str = ""  # the id the sample file shares with this document (store.save)
    failed_gradients: int = 0  # gradients that ended by an exception (their times cover only what ran)
    replays: str = ""  # REPLAYS: done, skipped (--no-replay, or the run ended early), interrupted; "" unknown
    notes: list = field(default_factory=list)  # what the profiler says about this run, in words
    unreplayed: int = 0  # signatures chosen for replay but left out at the --replay-budget
    unreplayed_s: float | None = None  # their inclusive gradient seconds in the run (None: not recorded)
    rules: list = field(default_factory=list)  # the rules files loaded with --rules, as given

    def by_id(self) -> dict:
        return {s.id: s for s in self.signatures}

    @property
    def replayed(self) -> bool:
        """Whether the isolated replays ran (profiles from before the field: any replay recorded)."""
        if self.replays:
            return self.replays != "skipped"
        return any(s.replay is not None for s in self.signatures)

    def problems(self) -> list[str]:
        """What makes this profile incomplete, in words (empty: a complete run, replayed)."""
        out = []
        if self.partial:
            out.append("interrupted (Ctrl-C): the numbers cover only what ran" if self.exit_status == 130
                       else "the program ended with os._exit: the numbers cover only what ran")
        elif self.exit_status:
            out.append(f"the program failed (exit status {self.exit_status})")
        if self.failed_gradients:
            n = self.totals.gradients
            out.append(f"{self.failed_gradients} of {n} gradient{'' if n == 1 else 's'} raised before finishing: "
                       "their times cover only what ran")
        if not self.replayed:
            out.append("no replays (profiled with --no-replay, or the run ended first): no primal times, AD ratios "
                       "or measured imports")
        elif self.replays == "interrupted":
            out.append("replays interrupted: some signatures have none")
        if self.unreplayed and (self.unreplayed_s is None or self.unreplayed_s > UNREPLAYED_SHARE * self.totals.gradient_s):
            out.append(f"{self.unreplayed} signature(s) not replayed within the --replay-budget")
        return out

    def to_json(self) -> dict:
        return {
            "schema": SCHEMA, "version": VERSION, "command": list(self.command), "created": self.created,
            "adcli_version": self.adcli_version, "python": self.python, "numpy": self.numpy,
            "platform": self.platform, "exit_status": self.exit_status, "partial": self.partial,
            "replay_s": self.replay_s, "pair": self.pair, "failed_gradients": self.failed_gradients,
            "replays": self.replays, "notes": list(self.notes), "unreplayed": self.unreplayed,
            "unreplayed_s": self.unreplayed_s,
            "rules": list(self.rules),
            "totals": self.totals.to_json(),
            "signatures": [s.to_json() for s in self.signatures], "tree": self.tree.to_json(),
        }

    @classmethod
    def from_json(cls, data: Any, path: str = "profile") -> "Profile":
        """Validate a parsed JSON document and build the profile; ProfileError (one line) if
        any field a reader uses is missing or has the wrong type."""
        return _Reader(path).profile(data)


# --- reading -----------------------------------------------------------------------------------


class _Reader:
    """Field-by-field validation, with the path of the offending field in every message."""

    def __init__(self, path: str):
        self.path = path
        self.version = VERSION

    def fail(self, where: str, what: str):
        # ``where`` may quote a key from the file, ``what`` its text: escaped to one line
        raise ProfileError(safe(f"{self.path}: {where} {what}"))

    def get(self, obj: dict, key: str, kind, where: str, default=...):
        v = obj.get(key, default) if default is not ... else obj.get(key)
        if v is None and default is None:
            return None
        ok = CHECKS[kind](v)
        if not ok:
            self.fail(f"field {where + key!r}", f"is missing or not {KIND_NAMES[kind]}")
        return float(v) if kind is float or kind is Signed else v

    def profile(self, data) -> Profile:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ProfileError(f"{self.path} is not an adcli profile (no 'schema': '{SCHEMA}' field)")
        version = data.get("version")
        if not is_int(version) or version < 1:
            raise ProfileError(f"{self.path}: 'version' must be a positive integer")
        if version > VERSION:
            raise ProfileError(
                f"{self.path} was written by a newer adcli (profile format {version}; this adcli reads up to {VERSION})")
        self.version = version
        t = self.get(data, "totals", dict, "")
        totals = Totals(self.get(t, "gradients", int, "totals."), self.get(t, "forward_s", float, "totals."),
                        self.get(t, "reverse_s", float, "totals."), self.get(t, "profiled_gradients", int, "totals.", None))
        if totals.profiled_gradients is not None and not 0 <= totals.profiled_gradients <= totals.gradients:
            self.fail("field 'totals.profiled_gradients'", "must be between 0 and 'totals.gradients'")
        raw = self.get(data, "signatures", list, "")
        signatures = [self.signature(s, f"signatures[{i}].") for i, s in enumerate(raw)]
        ids = {s.id for s in signatures}
        if len(ids) != len(signatures) or 0 in ids:
            self.fail("signatures", "must have distinct ids, none of them 0")
        command = data.get("command", [])
        if not (isinstance(command, list) and all(isinstance(c, str) for c in command)):
            self.fail("field 'command'", "must be a list of strings")
        meta = {k: self.get(data, k, str, "", "") for k in ("created", "adcli_version", "python", "numpy", "platform", "pair")}
        return Profile(
            totals=totals, signatures=signatures,
            tree=self.tree(self.get(data, "tree", list if self.version >= 2 else dict, ""), ids | {0}),
            command=command, partial=self.get(data, "partial", bool, "", False),
            exit_status=self.exit_status(data),
            replay_s=self.get(data, "replay_s", float, "", 0.0),
            failed_gradients=self.count(data, "failed_gradients"), replays=self.replays(data),
            notes=self.strings(data, "notes"), unreplayed=self.count(data, "unreplayed"),
            unreplayed_s=self.get(data, "unreplayed_s", float, "", None),
            rules=self.strings(data, "rules"), **meta)

    def strings(self, data: dict, key: str) -> list:
        v = data.get(key, [])
        if not (isinstance(v, list) and all(isinstance(n, str) for n in v)):
            self.fail(f"field {key!r}", "must be a list of strings")
        return list(v)

    def count(self, data: dict, key: str) -> int:
        v = data.get(key, 0)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            self.fail(f"field {key!r}", "must be a non-negative integer")
        return v

    def replays(self, data: dict) -> str:
        v = data.get("replays", "")
        if v not in REPLAYS + ("",):
            self.fail("field 'replays'", f"must be one of {', '.join(REPLAYS)}")
        return v

    def signature(self, s, where: str) -> SignatureStats:
        if not isinstance(s, dict):
            self.fail(f"field {where[:-1]!r}", "is not an object")
        text = self.get(s, "signature", str, where)
        if nesting(text) > MAX_NESTING:  # the grammar's parser recurses once per level
            self.fail(f"field '{where}signature'", f"nests types more than {MAX_NESTING} levels deep")
        try:
            sig = Signature.parse(text)
        except (ValueError, RecursionError) as exc:
            self.fail(f"field '{where}signature'", f"is not a signature: {exc}")
        kind = self.get(s, "kind", str, where)
        served = self.get(s, "served_by", str, where)
        for key, value, allowed in (("kind", kind, KINDS), ("served_by", served, SOURCES)):
            if value not in allowed:
                self.fail(f"field '{where}{key}'", f"must be one of {', '.join(allowed)}")
        sid = self.get(s, "id", int, where)
        counts = self.get(s, "served_counts", dict, where, {served: 0})
        if not all(k in SOURCES and is_count(v) for k, v in counts.items()):
            self.fail(f"field '{where}served_counts'", "must map rule kinds to counts")
        return SignatureStats(
            id=sid, signature=sig, kind=kind, served_by=served, served_counts=dict(counts),
            location=self.get(s, "location", str, where, ""), replay=self.replay(s.get("replay"), f"{where}replay"),
            sample=self.sample(s.get("sample"), f"{where}sample"), traced=self.traced(s, where),
            output=self.output(s, where), lines=self.get(s, "lines", int, where, None),
            **self.measured(s, where, required=True))

    def output(self, s: dict, where: str) -> str | None:
        if (v := s.get("output")) is None or isinstance(v, str) and v in OUTPUTS:
            return v
        self.fail(f"field '{where}output'", f"must be one of {', '.join(OUTPUTS)} or null")

    def traced(self, s: dict, where: str) -> list | None:
        if (v := s.get("traced")) is None or isinstance(v, list) and all(is_count(i) for i in v):
            return v
        self.fail(f"field '{where}traced'", "must be a list of argument positions or null")

    def exit_status(self, data: dict) -> int:
        v = data.get("exit_status", 0)
        if not (is_int(v) and -MAX_COUNT <= v <= MAX_COUNT):  # sys.exit(n) takes any integer
            self.fail("field 'exit_status'", "must be an integer")
        return v

    def measured(self, m: dict, where: str, required: bool) -> dict:
        """The Measured fields of a signature (times, calls and counts required) or a tree node."""
        d = ... if required else 0
        out = {k: self.get(m, k, float, where, d) for k in ("forward_s", "reverse_s", "self_forward_s", "self_reverse_s")}
        out.update({k: self.get(m, k, int, where, d) for k in ("calls", "primitives")})
        out["self_primitives"] = self.get(m, "self_primitives", int, where, 0)
        out["allocs"] = self.allocs(m.get("allocs", None if required else _NO_ALLOCS), f"{where}allocs")
        out["self_allocs"] = self.allocs(m.get("self_allocs", _NO_ALLOCS), f"{where}self_allocs")
        return out

    def allocs(self, a, where: str) -> Allocs:
        if not (isinstance(a, dict) and all(is_pair(a.get(k)) for k in ("forward", "reverse"))):
            self.fail(f"field {where!r}", "must hold forward and reverse [count, bytes] pairs of integers")
        return Allocs(tuple(a["forward"]), tuple(a["reverse"]))

    def replay(self, r, where: str) -> Replay | None:
        if r is None:
            return None
        if not isinstance(r, dict):
            self.fail(f"field {where!r}", "must be an object or null")
        if "error" in r:
            return Replay(error=self.get(r, "error", str, f"{where}."))
        w = f"{where}."
        direct = "direct_bytes" if self.version >= 2 else "direct_bytes_estimate"
        imports = self.get(r, "imports", list, w, [])
        return Replay(
            primal_s=self.get(r, "primal_s", float, w), derived_s=self.get(r, "derived_s", float, w),
            repeats=self.get(r, "repeats", int, w, 0), derived_peak_bytes=self.get(r, "derived_peak_bytes", int, w, None),
            direct_bytes=self.get(r, direct, int, w, None), direct_floor_s=self.get(r, "direct_floor_s", float, w, None),
            imports=[self.trial(t, f"{w}imports[{i}]") for i, t in enumerate(imports)],
            **{k: self.get(r, k, kind, w, None) for k, kind in DECOMPOSITION.items()})

    def trial(self, t, where: str) -> ImportTrial:
        if not isinstance(t, dict):
            self.fail(f"field {where!r}", "is not an object")
        w = f"{where}."
        if self.version >= 2:
            try:
                outcome = ImportOutcome(t.get("outcome"))
            except ValueError:
                self.fail(f"field '{w}outcome'", f"must be one of {', '.join(o.value for o in ImportOutcome)}")
        else:
            agrees = t.get("agrees")
            outcome = {True: ImportOutcome.AGREES, False: ImportOutcome.DISAGREES}.get(agrees, ImportOutcome.FAILED)
        trial = ImportTrial(
            rule=self.get(t, "rule", str, w), outcome=outcome, rule_s=self.get(t, "rule_s", float, w, None),
            rule_peak_bytes=self.get(t, "rule_peak_bytes", int, w, None),
            verification=self.get(t, "verification", str, w, ""), error=self.get(t, "error", str, w, None))
        if outcome is ImportOutcome.AGREES and trial.rule_s is None:
            self.fail(f"field '{w}rule_s'", "is missing for a rule that agreed")
        return trial

    def sample(self, s, where: str) -> Sample | None:
        if s is None:
            return None
        if not isinstance(s, dict) or not isinstance(s.get("args", []), list) or not isinstance(s.get("kwargs", {}), dict):
            self.fail(f"field {where!r}", "must be an object with args (a list) and kwargs (an object)")
        args, kwargs = s.get("args", []), s.get("kwargs", {})
        for name, e in [(f"args[{i}]", a) for i, a in enumerate(args)] + [(f"kwargs.{k}", v) for k, v in kwargs.items()]:
            bad = malformed(e)
            if bad is not None:
                self.fail(f"field '{where}.{name}{bad}'", "is not an encoded value")
        return Sample(list(args), dict(kwargs))

    def tree(self, tree, ids: set) -> CallTree:
        if self.version < 2:
            return self.nested_tree(tree, ids)
        if not tree:
            self.fail("the call tree", "is malformed (no root node)")
        nodes: list = []
        for i, node in enumerate(tree):
            parent = node.get("parent", -1) if isinstance(node, dict) else -1
            ok = (parent is None) if i == 0 else (is_int(parent) and 0 <= parent < i)
            sig = node.get("sig") if ok else None
            if not ok or not is_int(sig) or sig not in ids or (i == 0) != (sig == 0):
                self.fail(f"the call tree node [{i}]", "is malformed")
            t = CallTree(sig=node["sig"], **self.measured(node, f"tree[{i}].", required=False))
            if i:
                nodes[parent].children.append(t)
            nodes.append(t)
        return nodes[0]

    def nested_tree(self, root, ids: set) -> CallTree:
        """Version 1: the tree as nested objects (read iteratively, whatever its depth)."""
        out = None
        stack = [(root, None)]  # iterative: a deep (or hostile) tree must not exhaust Python's stack
        while stack:
            node, parent = stack.pop()
            if not isinstance(node, dict) or not is_int(node.get("sig")) or node["sig"] not in ids \
                    or not isinstance(node.get("children"), list):
                self.fail("the call tree", "is malformed")
            t = CallTree(sig=node["sig"], **self.measured(node, "tree node.", required=False))
            if parent is None:
                out = t
            else:
                parent.children.append(t)
            stack.extend((c, t) for c in reversed(node["children"]))
        return out


_NO_ALLOCS = {"forward": [0, 0], "reverse": [0, 0]}
