"""``adcli corpus run`` and ``adcli corpus suggest``: a corpus of programs profiled on Dask into
a store, and the library tier over it (adcli/corpus)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from ..advisor import IMPORT
from ..advisor.choose import LIBRARY
from ..advisor.config import thresholds
from ..corpus.programs import CorpusError, discover
from ..corpus.run import RunSummary, run_corpus
from ..corpus.store import CorpusStore
from ..corpus.tier import CorpusAdvice, library_tier
from ..corpus.worker import Limits
from ..version import __version__
from .advice import advise_profiles
from .export import Export, samples_of
from .output import check_output, write_output
from .stubs import rules_module
from .targets import export_target

__all__ = ["CorpusAdvice", "CorpusError", "CorpusRun", "corpus_export", "corpus_run", "corpus_suggest"]


@dataclass
class CorpusRun:
    store: str
    summary: RunSummary
    stored: dict  # status -> programs in the store now (this run's and earlier ones')


def corpus_run(targets: list, modules: list, store: str, *, tests: tuple = (), scheduler: str | None = None, workers: int = 2,
               timeout_s: float = 600.0, memory_bytes: int | None = 4 << 30, sample_bytes: int = 10 << 20,
               replay_budget: str = "auto", retry_failed: bool = False, rules: tuple = (),
               progress: Callable | None = None) -> CorpusRun:
    """Profile every program ``targets`` (scripts, folders), ``modules`` and ``tests`` name into ``store``
    (each with the rules modules ``rules`` loaded first, as ``adcli profile --rules``)."""
    if workers < 1:
        raise CorpusError("--workers must be at least 1")
    programs = discover(list(targets), list(modules), list(tests))
    for path in rules:
        if not os.path.isfile(path):
            raise CorpusError(f"no rules module at {path}")
    limits = Limits(timeout_s, memory_bytes, sample_bytes, replay_budget, tuple(os.path.abspath(p) for p in rules))
    with CorpusStore(store) as db:
        summary = run_corpus(programs, db, __version__, limits, scheduler=scheduler, workers=workers,
                             retry_failed=retry_failed, progress=progress)
        stored = dict(db.db.execute("SELECT status, count(*) FROM programs GROUP BY status").fetchall())
    return CorpusRun(store, summary, stored)


def corpus_suggest(store: str, verdicts: bool = True) -> CorpusAdvice:
    """The library tier of ``store`` (read only)."""
    with CorpusStore(store, create=False, read_only=True) as db:  # the thresholds `corpus export` advises with
        return library_tier(db, verdicts, thresholds({}, "."))


def corpus_export(store: str, output: str, *, force: bool = False) -> Export:
    """Write the library rules the corpus advice picks (imports and hand-write skeletons, each
    with its test on a sample from a program that called it) as one module the engine could
    ship; nothing is written when it picks none (``Export.path`` None)."""
    check_output(output, [os.path.join(store, "index.duckdb")], force)
    with CorpusStore(store, create=False, read_only=True) as db:
        loaded, _ = db.load_profiles(paths=True)
    if not loaded:
        raise CorpusError(f"the corpus store {store} holds no valid profile: nothing to advise from")
    paths, profs = [p for p, _ in loaded], [prof for _, prof in loaded]
    advice = advise_profiles(profs, thresholds({}, "."), paths, tier=LIBRARY)
    chosen = [s for s in advice.actionable if s.tier == LIBRARY and s.alternative_to is None]
    if not chosen:
        return Export(None, 0, 0)
    samples: dict = {}
    for path, prof in loaded:  # each rule's test on the first program's sample of its signature
        found = samples_of(path, prof, {s.signature for s in chosen} - set(samples))
        samples.update({sig: args for sig, (args, _) in found.items()})
    targets = {s.signature: export_target(s.signature, True, None, ()) for s in chosen}
    text = rules_module(chosen, samples, targets, source=store, version=__version__,
                        script=None, names={}, missing=None, synthesized={})
    write_output(output, text, force=force)
    named = [s for s in chosen if targets[s.signature][0] is not None]
    return Export(output, sum(s.action == IMPORT for s in named), len(named) - sum(s.action == IMPORT for s in named),
                  len(chosen) - len(named))
