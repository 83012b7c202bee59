"""The library tier over a corpus store: for each NumPy/SciPy signature derived somewhere in
the corpus, in how many programs, its share of their gradient time (median, largest) and of the
corpus's (total), from the index in one query; and the verdict, import, hand-write or keep
derived, from the advisor over the stored profiles (docs/advisor.md § Two tiers: a library
rule's burden counted once, what it saves summed over every program, and a rule worth its
burden in one program worth shipping for all).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..advisor import KEEP_DERIVED, Thresholds, suggest
from ..advisor.choose import LIBRARY
from .store import CorpusStore

# One row per library signature derived in some program: its programs, calls and time.
_TIER = """
SELECT s.signature, any_value(s.function), count(DISTINCT s.key), sum(s.calls), sum(s.gradient_s),
       median(s.share), max(s.share)
FROM signatures s JOIN programs p ON p.key = s.key
WHERE s.kind = 'numpy' AND s.served_by = 'derived'
GROUP BY s.signature
ORDER BY sum(s.gradient_s) DESC, s.signature
"""


@dataclass
class TierRow:
    signature: str
    function: str
    programs: int  # programs it is derived in
    calls: int
    total_s: float  # its gradient time, summed over them
    corpus_share: float  # of the corpus's gradient time
    median_share: float  # of its programs' own gradient time, the median program
    max_share: float
    action: str = KEEP_DERIVED
    saving_s: float | None = None  # what the action saves per run of every program, summed
    measured: bool = False  # the rule's cost measured (an import), not estimated (a rule still to write)
    reason: str = ""


@dataclass
class CorpusAdvice:
    store: str
    programs: int
    by_status: dict
    profiles: int  # loaded and valid
    gradient_s: float  # of those, summed
    rows: list = field(default_factory=list)
    corrupt: list = field(default_factory=list)  # (program, why) of stored profiles that do not validate
    incomplete: list = field(default_factory=list)  # (program, why) of profiles advised from, but incomplete
    query_s: float = 0.0  # the index query's time
    advisor_s: float = 0.0  # loading the profiles and the advisor's time


def library_tier(store: CorpusStore, verdicts: bool = True, th: Thresholds | None = None) -> CorpusAdvice:
    """The library tier of ``store`` (with ``verdicts``, the advisor's actions over its profiles,
    with the thresholds ``th``: the defaults if None)."""
    db = store.db
    start = time.perf_counter()
    by_status = dict(db.execute("SELECT status, count(*) FROM programs GROUP BY status ORDER BY status").fetchall())
    total = db.execute("SELECT coalesce(sum(gradient_s), 0) FROM programs").fetchone()[0]
    rows = [TierRow(sig, fn, n, int(calls), t, t / total if total > 0 else 0.0, med or 0.0, top or 0.0)
            for sig, fn, n, calls, t, med, top in db.execute(_TIER).fetchall()]
    advice = CorpusAdvice(store.folder, sum(by_status.values()), by_status, 0, total, rows,
                          query_s=time.perf_counter() - start)
    if not verdicts:
        return advice
    start = time.perf_counter()
    profiles, advice.corrupt = store.load_profiles()
    advice.profiles = len(profiles)
    # (a signature the replay budget left out has no measured import: the advice on it is weaker)
    advice.incomplete = [(" ".join(p.command)[:120] or "?", why[0]) for p in profiles if (why := p.problems())]
    if profiles:
        suggestions, _ = suggest(profiles, th)
        chosen = {str(s.signature): s for s in suggestions if s.tier == LIBRARY}
        for row in rows:
            s = chosen.get(row.signature)
            if s is not None:
                row.action, row.saving_s, row.measured = s.action, s.saving_s, s.rule_measured
                row.reason = s.reasons[0] if s.reasons else ""
    advice.advisor_s = time.perf_counter() - start
    return advice
