"""Issue "A profile is data", the proof: random profiles and random sample files, as a careless
user or an attacker could make them, never make adcli raise anything but its own one-line
errors, never run or import code, and never allocate more than the caps."""

from __future__ import annotations

import ast
import io
import json
import os
import random
import sys
import tempfile
import tracemalloc
import warnings
import zipfile

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from adcli.app.advice import advise
from adcli.app.compare import compare
from adcli.app.export import export
from adcli.app.profiling import show
from adcli.data import store
from adcli.data.model import Profile
from adcli.data.schema import ProfileError
from adcli.errors import AdcliError
from adcli.render import formats, render
from tests.support.profiles import document, stats, trial

# A fixed sample in the suite; ADCLI_FUZZ_EXAMPLES=5000 runs a longer, random one.
_LONG = os.environ.get("ADCLI_FUZZ_EXAMPLES")
FUZZ = settings(max_examples=int(_LONG or 150), derandomize=not _LONG, deadline=None,
                suppress_health_check=list(HealthCheck))

# --- nothing runs: audit events that mean code was executed, imported or unpickled ----------

_WATCHED = ("exec", "import", "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
            "pickle.find_class", "ctypes.dlopen")
_events: list | None = None


# Libraries load their own data lazily (rich's unicode tables): code from the installation is
# not code from a profile. Anything else executed or newly imported is.
_INSTALLED = tuple({os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
                   | {os.path.dirname(os.path.dirname(os.path.realpath(store.__file__))) + os.sep})


def _audit(event, args):
    if _events is None or event not in _WATCHED:
        return
    if event == "import" and args[0].partition(".")[0] in sys.modules:
        return
    if event == "exec" and os.path.realpath(getattr(args[0], "co_filename", "")).startswith(_INSTALLED):
        return
    _events.append((event, args[0] if args else None))


sys.addaudithook(_audit)  # cannot be removed; it records only while a test's body runs


class Watching:
    """Collects the watched audit events raised inside the block."""

    def __enter__(self):
        global _events
        _events = []
        self.events = _events
        return self

    def __exit__(self, *exc):
        global _events
        _events = None


def one_line(exc: BaseException) -> None:
    text = str(exc)
    assert text and "\n" not in text and "\r" not in text, repr(text)


# --- random JSON: mutations of a rich valid profile, and anything at all ---------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10)


def seed() -> dict:
    """A valid profile that uses every part of the format: imports, samples of each kind, a tree."""
    sample = {"args": [{"array": "s1_a0"}, {"value": 2, "dtype": "int64"}], "kwargs": {"axis": {"value": 0}}}
    user = {"args": [{"dict": {"W": {"array": "s2_a0_0"}, "b": {"list": [{"value": 1.5}]}}}], "kwargs": {}}
    sigs = [stats(1, "numpy.cumsum(f64[1d], i64)", imports=[trial("autograd.numpy.cumsum"),
                                                           trial("x.y", "failed", error="no")], sample=sample),
            stats(2, "pkg.mod:Model.loss(dict{W: f64[2d], b: list(float)})", sample=user, derived=0.05, primal=0.001),
            stats(3, "__main__.f(f64[1d])", derived=None)]
    doc = document(sigs, total=0.5)
    doc["tree"].append({"parent": 2, "sig": 1, "calls": 3, "forward_s": 0.01})
    return doc


def paths(doc, prefix=()):
    yield prefix
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield from paths(v, prefix + (k,))


def like(value):
    """Values of the same JSON type as ``value`` (so that more mutants pass validation and
    reach the readers), with the edge cases of that type."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(0, 3) | st.sampled_from([-1]) | st.sampled_from([0, 2**53, 2**53 + 1, 2**63, -(2**63), 10**30])
    if isinstance(value, float):
        return st.floats() | st.sampled_from([0.0, -0.0, 1e-300, 1e9, 1e10, 5e-324])
    if isinstance(value, str):
        return st.text(max_size=12) | st.sampled_from(["", "derived", "numpy.sum(f64[1d])", "x[/]", "\x1b[31m",
                                                      "__main__.f(**kw)", "agrees", "disagrees", "failed"])
    return JSON


@st.composite
def mutated(draw):
    doc = seed()
    every = list(paths(doc))[1:]
    rnd = random.Random(draw(st.integers(0, 2**32)))  # uniform over paths (hypothesis favours the first)
    for _ in range(draw(st.integers(1, 4))):
        path = rnd.choice(every)
        parent = doc
        try:
            for k in path[:-1]:
                parent = parent[k]
            how = draw(st.sampled_from(["like", "like", "replace", "delete", "add"]))
            if how == "delete":
                del parent[path[-1]]
            elif how == "add" and isinstance(parent, dict):
                parent[draw(st.text(max_size=8))] = draw(JSON)
            elif how == "like":
                parent[path[-1]] = draw(like(parent[path[-1]]))
            else:
                parent[path[-1]] = draw(JSON)
        except (KeyError, IndexError, TypeError):  # an earlier mutation removed the way there
            pass
    return doc


def readers_survive(doc, folder: str) -> None:
    """Load ``doc`` as a saved profile and run every reader on it: each either works or raises
    adcli's one-line error. Nothing is executed or imported meanwhile."""
    path = os.path.join(folder, "p.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(doc))
    with Watching() as w:
        try:
            store.load(path)
        except ProfileError as exc:
            one_line(exc)
            event("refused on load")
            return
        event("loaded")
        view = show(path)
        for fmt in formats(type(view)):
            render(view, fmt)
        comparison = compare(path, path)
        for fmt in formats(type(comparison)):
            render(comparison, fmt)
        try:
            advice = advise([path], start=folder)
            for fmt in formats(type(advice)):
                render(advice, fmt)
            out = os.path.join(folder, "rules.py")
            done = export(path, out, force=True, options={})
            event("exported" if done.path else "advised, nothing to export")
            if done.path:
                with open(out, encoding="utf-8") as f:
                    ast.parse(f.read())  # a valid module, whatever the profile held
        except AdcliError as exc:
            one_line(exc)
            event("refused by the advisor")
    assert w.events == []


def test_the_seed_is_a_valid_profile():
    Profile.from_json(seed(), "seed.json")


@FUZZ
@given(mutated())
def test_mutated_profiles_give_one_line_errors_or_work(doc):
    with tempfile.TemporaryDirectory() as folder:
        readers_survive(doc, folder)


@FUZZ
@given(JSON)
def test_any_json_gives_one_line_errors(doc):
    with tempfile.TemporaryDirectory() as folder:
        readers_survive(doc, folder)


# --- random sample files ---------------------------------------------------------------------

LIMIT = 4_000_000  # bytes Samples may read in this test (the real cap is store.MAX_ARRAY_BYTES)
DECOMPRESSOR = 16_000_000  # a fixed allowance: an LZMA decompressor alone takes 8 MB, whatever the data
DESCRS = ["<f8", ">f4", "<c16", "|b1", "<i8", "|O", "|V8", "<U3", "|S5", "<M8[D]", [("a", "<f8")], "nonsense", 5]


@st.composite
def npy(draw):
    """A ``.npy`` member: random bytes, or a header (maybe lying about its size) and a body."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=300))
    header = {"descr": draw(st.sampled_from(DESCRS)), "fortran_order": draw(st.booleans()),
              "shape": tuple(draw(st.lists(st.integers(0, 10**13), max_size=3)))}
    buf = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buf, header) if draw(st.booleans()) else \
            np.lib.format.write_array_header_2_0(buf, header)
    except (ValueError, TypeError):
        buf = io.BytesIO(np.lib.format.MAGIC_PREFIX + draw(st.binary(max_size=40)))
    body = draw(st.sampled_from([b"", b"\0" * 8, b"\0" * 80, b"\xff" * 5000]))
    return buf.getvalue() + body


NAME_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")  # what a zip can name
MEMBERS = st.lists(st.tuples(st.sampled_from(["s1_a0", "s2_a0_0", "__pair__", "x"]) | st.text(NAME_CHARS, max_size=6),
                             npy(), st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                                                     zipfile.ZIP_LZMA])), max_size=4)


@FUZZ
@given(MEMBERS, st.booleans())
def test_random_sample_files_give_one_line_errors_within_the_cap(members, paired):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "p.json")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # duplicate member names
            with zipfile.ZipFile(store.sidecar(path), "w") as z:
                for name, content, how in members:
                    z.writestr(name + ".npy", content, compress_type=how)
        profile = Profile.from_json(seed(), path)
        profile.pair = "0123" if paired else ""
        tracemalloc.start()
        try:
            with Watching() as w:
                try:
                    with store.Samples(path, profile, limit=LIMIT) as s:
                        for k in s.keys():
                            a = s.get(k)
                            event("an array read")
                            assert isinstance(a, np.ndarray) and not a.dtype.hasobject
                except ProfileError as exc:
                    one_line(exc)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert w.events == []
        assert peak < 2 * LIMIT + DECOMPRESSOR, peak
