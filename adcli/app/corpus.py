"""``adcli corpus run`` and ``adcli corpus suggest``: a corpus of programs profiled on Dask into
a store, and the library tier over it (adcli/corpus)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..corpus.programs import CorpusError, discover
from ..corpus.run import RunSummary, run_corpus
from ..corpus.store import CorpusStore
from ..corpus.tier import CorpusAdvice, library_tier
from ..corpus.worker import Limits
from ..version import __version__

__all__ = ["CorpusAdvice", "CorpusError", "CorpusRun", "corpus_run", "corpus_suggest"]


@dataclass
class CorpusRun:
    store: str
    summary: RunSummary
    stored: dict  # status -> programs in the store now (this run's and earlier ones')


def corpus_run(targets: list, modules: list, store: str, *, scheduler: str | None = None, workers: int = 2,
               timeout_s: float = 600.0, memory_bytes: int | None = 4 << 30, sample_bytes: int = 10 << 20,
               replay_budget: str = "auto", retry_failed: bool = False, progress: Callable | None = None) -> CorpusRun:
    """Profile every program ``targets`` (scripts, folders) and ``modules`` name into ``store``."""
    if workers < 1:
        raise CorpusError("--workers must be at least 1")
    programs = discover(list(targets), list(modules))
    limits = Limits(timeout_s, memory_bytes, sample_bytes, replay_budget)
    with CorpusStore(store) as db:
        summary = run_corpus(programs, db, __version__, limits, scheduler=scheduler, workers=workers,
                             retry_failed=retry_failed, progress=progress)
        stored = dict(db.db.execute("SELECT status, count(*) FROM programs GROUP BY status").fetchall())
    return CorpusRun(store, summary, stored)


def corpus_suggest(store: str, verdicts: bool = True) -> CorpusAdvice:
    """The library tier of ``store`` (read only)."""
    with CorpusStore(store, create=False, read_only=True) as db:
        return library_tier(db, verdicts)
