"""The profiling session: the engine's hook object while a program runs under ``adcli profile``.

What it observes, and how:

* user functions: their dispatch points (rules/instrument.py compiles the script and the
  user's modules so that every function is one), only while a gradient is being recorded;
* NumPy functions the engine dispatches: the ``numpy_call`` hook (which rule source served it);
* ufuncs and other primitives: not as calls (``sys.setprofile`` does not see ufuncs and there
  are too many); each tape node is attributed to the innermost call open when it was recorded.

Every signature node of the call tree collects calls, forward time (inclusive; self is derived),
reverse time (the pullbacks of the nodes it recorded), primitive counts, and allocations: arrays
the forward pass made (``core.output_of``) and the cotangent arrays the reverse pass made for the
values it recorded (one per value however many shares were summed into it; views, cotangents
passed on unchanged and in-place accumulation allocate nothing); the gradients of the inputs are
charged to the top-level call (the function handed to ``grad``).

The bookkeeping is per call event, not per primitive: the tape is kept as stretches, each
recorded by one call, and the reverse pass times a stretch as a whole (profiling a loop of
scalar operations costs the engine's own work plus a little per call).
"""

from __future__ import annotations

import fnmatch
import gc
import os
import sys
import threading
import time

import numpy as np

from ..engine import hooks, library, triangular
from ..engine.core import Tracer, has_tracer
from ..engine.fills import unfill
from ..engine.signature import Signature, signature_key
from ..engine.tape import backward
from .paths import code_location, default_excluded
from .sampling import OVERHEAD_BUDGET, Sampler, capture, merged
from .stretches import reverse, stretches_of

ndarray = np.ndarray
_perf = time.perf_counter


class CallNode:
    """One signature at one place in the call tree (children keyed by signature id)."""

    __slots__ = ("sig", "parent", "children", "by_key", "calls", "fwd", "rev", "prims", "fwd_allocs", "fwd_bytes",
                 "rev_allocs", "rev_bytes", "t0", "mark")

    def __init__(self, sig, parent):
        self.sig = sig
        self.parent = parent
        self.children: dict = {}
        self.by_key: dict = {}  # the same children by the session's call key (one lookup per call)
        self.calls = 0
        self.fwd = 0.0  # inclusive forward seconds
        self.rev = 0.0  # self reverse seconds (pullbacks of nodes it owns)
        self.prims = 0  # self primitive count
        self.fwd_allocs = self.fwd_bytes = self.rev_allocs = self.rev_bytes = 0
        self.t0 = 0.0
        self.mark = 0

    def child(self, sig) -> "CallNode":
        node = self.children.get(sig.id)
        if node is None:
            node = self.children[sig.id] = CallNode(sig, self)
        return node


def output_kind(out) -> str:
    """What a call returned, as a rule would have to: "value" (an array or a number, traced or
    not), "tuple" (of values: a rule may return several outputs), else "list", "dict", "None"
    or "object", which no rule can return."""
    if isinstance(out, tuple) and not hasattr(out, "_fields"):
        return "tuple" if all(output_kind(o) == "value" for o in out) else "object"
    if isinstance(out, (np.ndarray, np.generic, float, int, Tracer)):
        return "value"
    if out is None:
        return "None"
    return type(out).__name__ if isinstance(out, (list, dict)) else "object"


class Observed:
    """One signature as the session saw it: the unit the advisor reasons about."""

    __slots__ = ("id", "signature", "kind", "served", "location", "func", "sample", "sample_kwargs", "traced",
                 "output")

    def __init__(self, id: int, signature: Signature | None, kind: str, location: str):
        self.id = id
        self.signature = signature  # None for the program root
        self.kind = kind  # "numpy" or "user"
        self.served: dict = {}  # rule source -> calls
        self.location = location
        self.func = None  # the callable, for replays (never serialised)
        self.sample = None  # the first call's arguments, copied (see Session.sample_limit)
        self.sample_kwargs = None
        self.traced = None  # positions of the arguments that held traced values, in any call
        self.output = None  # what the first call returned (output_kind): can a rule return it?


class _Thread:
    """What one thread's gradient in progress needs: its tape, its stack of open calls, and
    which call recorded each stretch of the tape. Programs may take gradients in several
    threads at once (each has its own, see _Local); a plain slotted object, because every
    profiled call reads and writes it several times."""

    __slots__ = ("stack", "tape", "marks", "top", "charged", "t_enter", "t_start", "t_forward", "t_reverse", "done",
                 "kind", "light", "batch")

    def __init__(self, root: CallNode, batch):
        self.stack: list = [root]
        self.tape = None
        # The tape in stretches: (first index, CallNode that recorded nodes from there on). A
        # call event appends one only when new nodes were recorded since the last, so the
        # bookkeeping is per call, not per primitive, and the reverse pass times whole stretches.
        self.marks: list = []
        self.top = None  # the CallNode of the last mark
        self.charged = 0  # tape nodes covered by marks
        self.t_enter = self.t_start = self.t_forward = self.t_reverse = 0.0  # t_enter: start() was called
        self.done = None  # the tape whose reverse pass ran, until finish() adds up its times
        self.kind = None  # the sampling.Kind of the gradient in progress
        self.light = None  # the tape of a gradient timed whole only (not recorded in full, see sampling)
        self.batch = batch  # this thread's gradients timed whole, counted without the lock (sampling.Batch)


class _Local(threading.local):
    """Each thread's _Thread, as ``.state``."""

    def __init__(self, root: CallNode, new_batch):
        self.state = _Thread(root, new_batch())


class Session(hooks.Session):
    """Collects the call tree of every gradient a program takes (in any thread)."""

    def __init__(self, include=(), exclude=(), root_dir: str | None = None, sample_limit: int = 1_000_000,
                 sample_budget: int = 100_000_000, every_gradient: bool = False,
                 overhead_budget: float = OVERHEAD_BUDGET):
        triangular.scipy_linalg()  # the engine's lazy load, here: not timed as a pullback of the program
        self._root_sig = Observed(0, None, "root", "")
        self.signatures: dict = {}  # key -> Observed
        self.by_id: dict = {0: self._root_sig}
        # which gradients are recorded in full, each kind of them under its own root, and the
        # counts and seconds of all of them (sampling)
        self.sampler = Sampler(every_gradient, overhead_budget)
        self.lock = threading.RLock()
        self.local = _Local(CallNode(self._root_sig, None), self._new_batch)
        # Shared tables and counters change under self.lock; a thread's own state needs none.
        self._timing = 0  # gradients being timed now, in all threads (GC is off while > 0)
        self._gc_was_enabled = False
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.root_dir = os.path.abspath(root_dir) if root_dir else None
        self.sample_limit = sample_limit  # elements kept per signature
        self.sample_budget = sample_budget  # bytes kept over all signatures
        self.sample_bytes = 0
        self._user_code: dict = {}

    @property
    def root(self) -> CallNode:
        """The call tree of the whole run: the kinds' trees merged, scaled to all their gradients."""
        return merged(list(self._totals().kinds.values()), CallNode(self._root_sig, None))

    def _new_batch(self):
        with self.lock:
            return self.sampler.new_batch()

    def _totals(self):
        with self.lock:
            self.sampler.settle_all()
            return self.sampler

    @property
    def gradients(self) -> int:
        return self._totals().gradients

    @property
    def failed_gradients(self) -> int:
        """Gradients that ended by an exception."""
        return self._totals().failed

    @property
    def forward_s(self) -> float:
        return self._totals().forward_s

    @property
    def reverse_s(self) -> float:
        return self._totals().reverse_s

    @property
    def profiled_gradients(self) -> int:
        return self.sampler.profiled

    # --- which code is the user's ---
    def is_user_path(self, filename: str) -> bool:
        hit = self._user_code.get(filename)
        if hit is None:
            hit = self._user_code[filename] = self._classify(filename)
        return hit

    def _classify(self, filename: str) -> bool:
        if filename.startswith("<"):
            return False
        path = os.path.abspath(filename)
        if any(fnmatch.fnmatch(path, g) or fnmatch.fnmatch(os.path.basename(path), g) for g in self.exclude):
            return False
        if self.include:
            return any(fnmatch.fnmatch(path, g) or fnmatch.fnmatch(os.path.basename(path), g) for g in self.include)
        if default_excluded(path):
            return False
        return self.root_dir is None or path.startswith(self.root_dir + os.sep)

    # --- engine hooks ---
    def start(self, tape, f, args=(), kwargs=None) -> None:
        loc = self.local.state
        batch = loc.batch
        if batch.credit > 0 and self.sampler.fast(batch, f, args, kwargs):  # timed whole, without the lock
            kind, full = batch.kind, False
        else:
            t_enter = _perf()
            with self.lock:
                kind, full = self.sampler.choose(f, lambda: CallNode(self._root_sig, None), args, kwargs, batch)
                batch.alone = threading.active_count() == 1
                # No garbage collection while a gradient is timed (as timeit does): a full
                # collection in a large process takes longer than most calls and would be charged to whichever
                # call it hit. Collection runs as usual between gradients.
                if full:
                    if self._timing == 0:
                        self._gc_was_enabled = gc.isenabled()
                        gc.disable()
                    self._timing += 1
        loc.kind = kind
        if full:
            loc.t_enter = t_enter
            loc.tape = tape
            loc.marks = []
            loc.top = None
            loc.charged = len(tape.nodes)  # the leaves, recorded before f runs
            loc.stack = [kind.root]
        else:  # timed whole: every call takes numpy_call's first return
            loc.tape = None
            loc.light = tape
            # no collection in it either (as in those recorded in full, or they would look
            # slower than those and the budget would record all in full)
            batch.gc = gc.isenabled()
            if batch.gc:
                gc.disable()
            # In a program with one thread, the session steps aside until finish(): the engine
            # and the dispatch points then run as with no profiler (the engine keeps calling
            # backward and finish, which it looked up at the start). With other threads, one of
            # them may be recording a gradient in full: every call goes through numpy_call.
            # (Threads are counted when this one asks the sampler, at least every 1000 gradients:
            # gradients a thread started since takes meanwhile go unseen until then.)
            batch.hidden = batch.alone and hooks.current() is self
            if batch.hidden:
                hooks.uninstall()
        loc.t_forward = loc.t_reverse = 0.0
        loc.t_start = _perf()

    def numpy_call(self, module, qualname, source, fn, spread, args, kwargs, func=None):
        loc = self.local.state
        tape = loc.tape
        if tape is None:
            return fn(*args, **kwargs) if spread else fn(args, kwargs)
        # keyed by plain strings (cheap to hash); the Signature is built once per new key, and
        # each call node finds its child by the key itself
        key = (func is not None, module, qualname, signature_key(args, kwargs))
        stack = loc.stack
        parent = stack[-1]
        n = len(tape.nodes)
        if n > loc.charged:  # nodes the caller recorded since the last call event: _flush, inline
            if loc.top is not parent:
                loc.marks.append((loc.charged, parent))
                loc.top = parent
            parent.prims += n - loc.charged
            loc.charged = n
        node = parent.by_key.get(key)
        if node is None:
            node = self._child(parent, key, module, qualname, func)
        node.calls += 1
        sig = node.sig
        if sig.sample is None:
            self._sample(sig, args, kwargs)
        elif sig.traced is not None and len(sig.traced) < len(args):
            self._traced(sig, args)
        served = sig.served
        served[source] = served.get(source, 0) + 1
        stack.append(node)
        t0 = _perf()
        try:
            out = fn(*args, **kwargs) if spread else fn(args, kwargs)
        finally:
            t1 = _perf()
            n = len(tape.nodes)
            if n > loc.charged:  # the nodes this call recorded itself
                if loc.top is not node:
                    loc.marks.append((loc.charged, node))
                    loc.top = node
                node.prims += n - loc.charged
                loc.charged = n
            node.fwd += t1 - t0
            if stack and stack[-1] is node:
                stack.pop()
        if sig.output is None:
            sig.output = output_kind(out)
        return out

    def backward(self, tape, acc, start: int) -> None:
        loc = self.local.state
        t_fwd = _perf()
        if loc.tape is not tape:
            if loc.light is not tape:  # not ours (started before this session was installed)
                backward(tape.nodes, acc, start)
                return
            try:
                backward(tape.nodes, acc, start)
            finally:
                loc.t_forward = t_fwd - loc.t_start
                loc.t_reverse = _perf() - t_fwd
                loc.done = tape
            return
        self._flush(loc, loc.stack[-1])
        nodes = tape.nodes
        stretches = stretches_of(nodes, loc.marks)
        try:
            reverse(nodes, acc, start, stretches, loc.kind.root)
        finally:
            loc.t_forward = t_fwd - loc.t_start
            loc.t_reverse = _perf() - t_fwd
            loc.tape = None
            loc.done = tape

    def finish(self, tape) -> None:
        """The gradient computation ended (also when ``f`` raised before its reverse pass)."""
        loc = self.local.state
        if loc.tape is tape:  # recorded in full, no reverse pass
            self._flush(loc, loc.stack[-1])
            stretches_of(tape.nodes, loc.marks)
            loc.tape = None
            loc.t_forward = _perf() - loc.t_start
        elif loc.light is tape:
            if loc.done is not tape:  # timed whole, no reverse pass
                loc.t_forward = _perf() - loc.t_start
        elif loc.done is not tape:
            return  # not ours (started before this session was installed)
        full = loc.light is not tape
        loc.done = loc.light = None
        forward = loc.t_forward
        failed = sys.exc_info()[0] is not None  # called from the engine's finally: an exception is on its way
        if not full:  # counted on the thread's batch, without the lock
            batch = loc.batch
            if batch.hidden:
                hooks.install(self)
                batch.hidden = False
            if batch.gc:
                gc.enable()
                batch.gc = False
            batch.n += 1
            batch.forward_s += forward
            batch.reverse_s += loc.t_reverse
            if forward + loc.t_reverse < batch.fastest:
                batch.fastest = forward + loc.t_reverse
            batch.failed += failed
            return
        with self.lock:
            # what the recording cost the program: from start() to here, the bookkeeping
            # outside the timed forward and reverse passes included (the budget weighs it)
            self.sampler.done(loc.kind, forward, loc.t_reverse, failed, _perf() - loc.t_enter)
            self._timing = max(self._timing - 1, 0)
            if self._timing == 0 and self._gc_was_enabled:
                self._gc_was_enabled = False
                gc.enable()

    # --- the call tree ---
    def _child(self, parent: CallNode, key, module: str, qualname: str, func) -> CallNode:
        """The child of ``parent`` for a call key seen there for the first time."""
        sig = self.signatures.get(key)
        if sig is None:
            sig = self._signature(key, module, qualname, func)
        with self.lock:
            node = parent.by_key[key] = parent.child(sig)
        return node

    def _signature(self, key, module: str, qualname: str, func) -> Observed:
        """The Observed for a new key (``func``: the user function, None for NumPy's)."""
        with self.lock:
            sig = self.signatures.get(key)
            if sig is None:
                user = func is not None
                sig = Observed(len(self.by_id), Signature.from_key(module, qualname, key[3]), "user" if user else "numpy",
                               code_location(func) if user else "")
                sig.func = func if user else _numpy_func(module, qualname)
                self.by_id[sig.id] = sig
                self.signatures[key] = sig
            return sig

    def _sample(self, sig: Observed, args, kwargs) -> None:
        with self.lock:
            if sig.sample is None:
                args, kwargs = unfill(args), unfill(kwargs)  # arrays made by np.zeros & co.: what they stand for
                sig.traced = tuple(i for i, a in enumerate(args) if has_tracer(a))
                sample, sample_kwargs, nbytes = capture(args, kwargs, self.sample_limit,
                                                        self.sample_budget - self.sample_bytes)
                sig.sample, sig.sample_kwargs = sample, sample_kwargs
                self.sample_bytes += nbytes

    def _traced(self, sig: Observed, args) -> None:  # a net run on data, then on traced latents: both
        if more := [i for i, a in enumerate(args) if i not in sig.traced and has_tracer(a)]:
            with self.lock:
                sig.traced = tuple(sorted({*sig.traced, *more}))

    def _flush(self, loc: _Thread, top: CallNode) -> None:
        """Charge the tape nodes recorded since the last call event to ``top``."""
        tape = loc.tape
        if tape is None:
            return
        n = len(tape.nodes)
        k = loc.charged
        if n > k:
            if loc.top is not top:
                loc.marks.append((k, top))
                loc.top = top
            top.prims += n - k
            loc.charged = n


def _numpy_func(module: str, qualname: str):
    """The NumPy (or SciPy) callable a public name names, if its module is loaded."""
    key = library.key_of(f"{module}.{qualname}")  # a SciPy function served by engine.library
    if key is not None:
        return key
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def run_with_profile_hook(session: Session, fn):
    """Run ``fn()`` with the session installed as the engine's hook."""
    hooks.install(session)
    try:
        return fn()
    finally:
        hooks.uninstall()
