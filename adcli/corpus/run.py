"""A corpus run on Dask: every program not stored yet profiled by a worker (worker.py), each
outcome stored as it arrives (store.py).

Dask's distributed scheduler, because it is made for this: tasks handed to worker processes on
one machine or many, a task whose worker dies run again on another (up to its
``allowed-failures``, then reported here as a crash), workers restarted by their nanny. By
default an embedded local cluster of worker processes (nothing to start); ``scheduler`` names an
existing one (``dask scheduler`` / ``dask worker``: the workers need adcli and the programs'
files at the same paths). Each worker runs one program at a time (one thread), and each program
runs in a process of its own under its limits.

Ctrl-C stops the run: the programs still running are cancelled, every stored one stays, and a
rerun picks up where it stopped (programs are skipped by key: programs.py).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Callable

from .inputs import Inputs
from .programs import CorpusError, Program
from .store import CorpusStore
from .worker import Limits, run_program


def _digest(path: str) -> str:
    """A rules module's content, for the programs' keys (profiled with other rules: run again)."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError as exc:
        raise CorpusError(f"cannot read the rules module {path}: {exc.strerror or exc}") from None


@dataclass
class RunSummary:
    programs: int  # named by the targets
    skipped: int  # stored before under the same key, its inputs unchanged
    changed: int = 0  # stored before under the same key, run again: an input changed
    counts: dict = field(default_factory=dict)  # status -> programs run now
    wall_s: float = 0.0
    interrupted: bool = False
    workers: int = 0


def run_corpus(programs: list[Program], store: CorpusStore, version: str, limits: Limits, *,
               scheduler: str | None = None, workers: int = 2, retry_failed: bool = False,
               progress: Callable | None = None) -> RunSummary:
    """Profile ``programs`` into ``store``; ``progress(done, total, counts)`` after each one."""
    from distributed import Client, LocalCluster, as_completed
    from distributed.client import FutureCancelledError

    options = (limits.sample_bytes, limits.replay_budget, tuple(_digest(path) for path in limits.rules))
    keyed = [(p, p.key(version, options)) for p in programs]
    stored, inputs, look = store.stored(), store.inputs(), Inputs()
    todo, changed = [], 0
    for p, k in keyed:
        if k not in stored or (retry_failed and stored[k] != "ok"):
            todo.append((p, k))
        elif look.changed(inputs.get(k, ())) is not None:
            todo.append((p, k))
            changed += 1
    summary = RunSummary(len(programs), len(programs) - len(todo), changed)
    start = time.perf_counter()
    if not todo:
        return summary
    cluster = None
    try:
        if scheduler is None:
            # on this machine only, its dashboard on any free port (a fixed one may be taken: a warning)
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address="127.0.0.1:0", memory_limit=0, silence_logs=50)
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise CorpusError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
    summary.workers = len(client.scheduler_info().get("workers", {}))
    futures = {}
    try:
        for p, k in todo:
            futures[client.submit(run_program, p, limits, key=f"adcli-corpus-{k}", pure=False)] = (p, k)
        done = 0
        for fut in as_completed(list(futures)):
            p, k = futures[fut]
            try:
                outcome = fut.result()
            except FutureCancelledError:
                continue
            except Exception as exc:  # noqa: BLE001 - the task failed on the cluster (its worker died too often)
                outcome = {"status": "crash", "reason": f"{type(exc).__name__}: {exc}"[:300], "wall_s": 0.0,
                           "profile": None, "samples": None, "host": None}
            status = store.record(p, k, outcome, version)
            summary.counts[status] = summary.counts.get(status, 0) + 1
            done += 1
            if progress is not None:
                progress(done, len(todo), dict(summary.counts))
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        for fut in futures:
            if not fut.done():
                fut.cancel()
        client.close()
        if cluster is not None:
            cluster.close()
        summary.wall_s = time.perf_counter() - start
    return summary
