"""The corpus store: a folder holding each program's profile as ``adcli profile`` writes it
(``profiles/<key>.json`` and its ``.npz`` samples) and an index in DuckDB (``index.duckdb``),
one row per program and one per (program, signature), for queries across programs.

DuckDB, an embedded analytical database, because the questions asked of a corpus are group-bys
and medians over all its rows (``tier.py``), which it answers in one query at any size, from one
file and with no server. Only the process running the corpus writes the store; each program is
stored whole or not at all: its files are written atomically (staged, then renamed), then its
rows in one transaction, so a run killed at any point loses nothing already stored and leaves
no half-stored program (a program whose files are there but whose rows are not is run again).

The store is data, like a profile: reading it runs nothing, and every profile is validated by
adcli.data when it is read (a corrupt one is reported and skipped).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re

from ..data import store as profiles
from ..errors import AdcliError
from ..fileio import OutputError, publish, stage
from .programs import CorpusError, Program

_KEY = re.compile(r"^[0-9a-f]{32}$")  # programs.Program.key's digests

SCHEMA = """
CREATE TABLE IF NOT EXISTS programs (
    key VARCHAR PRIMARY KEY, program VARCHAR, kind VARCHAR, status VARCHAR, reason VARCHAR,
    wall_s DOUBLE, gradient_s DOUBLE, signatures INTEGER, host VARCHAR, adcli_version VARCHAR,
    stored_at TIMESTAMP);
CREATE TABLE IF NOT EXISTS signatures (
    key VARCHAR, signature VARCHAR, function VARCHAR, kind VARCHAR, served_by VARCHAR, calls BIGINT,
    gradient_s DOUBLE, derived_s DOUBLE, share DOUBLE, PRIMARY KEY (key, signature));
CREATE TABLE IF NOT EXISTS inputs (
    key VARCHAR, path VARCHAR, size BIGINT, mtime_ns BIGINT, sha256 VARCHAR, PRIMARY KEY (key, path));
"""


class CorpusStore:
    """A corpus store at ``folder`` (made if missing, with ``create``)."""

    def __init__(self, folder: str, create: bool = True, read_only: bool = False):
        self.folder = folder
        index = os.path.join(folder, "index.duckdb")
        if not os.path.isdir(folder):
            if not create:
                raise CorpusError(f"no corpus store at {folder} (run `adcli corpus run ... --store {folder}` first)")
            try:
                os.makedirs(os.path.join(folder, "profiles"))
            except OSError as exc:
                raise OutputError(f"cannot make the corpus store {folder}: {exc.strerror or exc}") from None
        elif not os.path.exists(index) and not create:
            raise CorpusError(f"{folder} is not a corpus store (no index.duckdb)")
        if not read_only:
            os.makedirs(os.path.join(folder, "profiles"), exist_ok=True)
        import duckdb  # only the corpus commands need it: other commands start without loading it

        try:
            self.db = duckdb.connect(index, read_only=read_only and os.path.exists(index))
            if not read_only:
                self.db.execute(SCHEMA)
        except duckdb.Error as exc:
            raise CorpusError(f"cannot open the corpus store's index {index}: {str(exc).splitlines()[0]}") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def profile_path(self, key: str) -> str:
        """Where the profile stored under ``key`` is; a key that is not one (a store is data: an
        index made by hand could name ``../x``) is a CorpusError, never a path outside the store."""
        if not isinstance(key, str) or not _KEY.match(key):
            raise CorpusError(f"the corpus store {self.folder} names a program by {key!r}, which is not a key")
        return os.path.join(self.folder, "profiles", f"{key}.json")

    def stored(self) -> dict:
        """``{key: status}`` of every program stored."""
        return dict(self.db.execute("SELECT key, status FROM programs").fetchall())

    def inputs(self) -> dict:
        """``{key: [(path, size, mtime_ns, sha256)]}``: the files each stored program read
        (inputs.py; a program missing here read none that count, or its inputs are unknown)."""
        out: dict = {}
        for key, *row in self.db.execute("SELECT key, path, size, mtime_ns, sha256 FROM inputs ORDER BY key, path").fetchall():
            out.setdefault(key, []).append(tuple(row))
        return out

    def record(self, program: Program, key: str, outcome: dict, version: str) -> str:
        """Store one program's outcome (worker.run_program's): its profile files, then its rows,
        in one transaction. Returns the status stored (a profile that does not validate makes a
        program ``crash``, its reason saying so)."""
        status, reason = outcome["status"], outcome["reason"]
        prof, rows = None, []
        if outcome.get("profile") is not None:
            path = self.profile_path(key)
            moves = [(stage(path, lambda f: f.write(outcome["profile"]), binary=True), path)]
            if outcome.get("samples") is not None:
                npz = profiles.sidecar(path)
                moves.insert(0, (stage(npz, lambda f: f.write(outcome["samples"]), binary=True), npz))
            publish(moves)
            try:
                prof = profiles.load(path)
            except AdcliError as exc:
                status, reason = "crash", f"its profile is not valid: {exc}"[:300]
        if prof is not None:
            total = prof.totals.gradient_s
            for s in prof.signatures:
                derived = s.replay.derived_s if s.replay is not None and s.replay.measured else None
                rows.append((key, str(s.signature), s.signature.function, s.kind, s.served_by, s.calls, s.gradient_s,
                             derived, s.gradient_s / total if total > 0 else None))
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        self.db.execute("BEGIN TRANSACTION")
        try:
            # one version of a program: the one stored before under another key (its source changed) goes
            old = [k for (k,) in self.db.execute("SELECT key FROM programs WHERE program = ? AND kind = ? AND key <> ?",
                                                 [program.name, program.kind, key]).fetchall()]
            for k in [key, *old]:
                for table in ("signatures", "inputs", "programs"):
                    self.db.execute(f"DELETE FROM {table} WHERE key = ?", [k])
            self.db.execute("INSERT INTO programs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            [key, program.name, program.kind, status, reason, outcome["wall_s"],
                             prof.totals.gradient_s if prof is not None else None, len(rows), outcome.get("host"),
                             version, now])
            if rows:
                self.db.executemany("INSERT INTO signatures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            if outcome.get("inputs"):
                self.db.executemany("INSERT INTO inputs VALUES (?, ?, ?, ?, ?)",
                                    [(key, *row) for row in outcome["inputs"]])  # one row per path (a probe's set)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        for k in old:  # its files, once no row names them (a row's key is data: only a key's files)
            if not _KEY.match(k):
                continue
            for path in (self.profile_path(k), profiles.sidecar(self.profile_path(k))):
                with contextlib.suppress(OSError):
                    os.unlink(path)
        return status

    def load_profiles(self, paths: bool = False) -> tuple[list, list]:
        """(the stored profiles that validate, [(program, why) for those that do not]); with
        ``paths``, each profile as ``(its path, the profile)``."""
        good, bad = [], []
        for key, name in self.db.execute("SELECT key, program FROM programs WHERE gradient_s IS NOT NULL "
                                         "ORDER BY program").fetchall():
            try:
                path = self.profile_path(key)
                prof = profiles.load(path)
            except AdcliError as exc:
                bad.append((name, str(exc)))
                continue
            good.append((path, prof) if paths else prof)
        return good, bad
