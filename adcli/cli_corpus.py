"""``adcli corpus``: the commands for a corpus of programs (adcli.app.corpus), in the command
line's manner (cli.py): parse, call the app, render."""

from __future__ import annotations

import sys
import time

import click

from . import app
from .cli_types import Seconds, Size
from .render import console as console_settings
from .render import formats, render
from .render.progress import progress_callback
from .units import duration


@click.group(short_help="Profile a corpus of programs on Dask; the library tier over it.")
def corpus() -> None:
    """Profile many programs, each in its own process, on a Dask cluster, into a corpus store,
    and advise which library rules an engine should ship."""


@corpus.command("run")
@click.argument("targets", nargs=-1)
@click.option("-m", "modules", multiple=True, metavar="MODULE", help="A module to run as `python -m` (repeatable).")
@click.option("--tests", multiple=True, metavar="PATH",
              help="A test file or folder: each test pytest collects there is a program (repeatable).")
@click.option("--store", required=True, metavar="DIR", help="The corpus store (made if missing).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="An existing Dask scheduler (tcp://host:8786); default: a local cluster of worker processes.")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Worker processes of the local cluster.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True,
              help="Seconds one program may run.")
@click.option("--memory", type=Size(), default="4GiB", show_default=True,
              help="Memory one program may reserve (its address space; 0: no limit).")
@click.option("--sample-budget", type=Size(), default="10MB", show_default=True,
              help="Bytes of sample inputs kept with each profile.")
@click.option("--replay-budget", type=Seconds(), default="auto", show_default=True,
              help="Each program's replays, as `adcli profile --replay-budget`.")
@click.option("--rules", "rules_files", multiple=True, metavar="FILE",
              help="A rules module each program is profiled with (repeatable), as `adcli profile --rules`.")
@click.option("--retry-failed", is_flag=True, help="Run the programs stored with a failure again.")
@click.option("--format", "fmt", type=click.Choice(formats(app.CorpusRun)), default="table", show_default=True)
def corpus_run(targets, modules, tests, store, scheduler, workers, timeout, memory, sample_budget, replay_budget, rules_files,
               retry_failed, fmt) -> None:
    """Profile every program TARGETS name (scripts; folders: their .py files that import adcli)
    into the store; the programs stored before under the same source, options and adcli version
    are skipped, unless a file they read (a module, a data file) changed. Ctrl-C stops the run
    and keeps every program finished."""
    with progress_callback("profiling", "done") as bar:
        result = app.corpus_run(list(targets), list(modules), store, tests=tests, scheduler=scheduler, workers=workers,
                                timeout_s=timeout, memory_bytes=memory or None, sample_bytes=sample_budget,
                                replay_budget=str(replay_budget), retry_failed=retry_failed, rules=rules_files,
                                progress=_progress(bar))
    click.echo(render(result, fmt))
    if result.summary.interrupted:
        sys.exit(130)


def _progress(bar):
    """The run's progress: the bar on a terminal, else a line on stderr now and then (not with --quiet)."""
    start, last = time.monotonic(), [0.0]

    def progress(done: int, total: int, counts: dict) -> None:
        label = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        if bar is not None:
            bar(done, total, label, done)
            return
        now = time.monotonic()
        if console_settings.QUIET or (now - last[0] < 10 and done < total):
            return
        last[0] = now
        left = (now - start) / done * (total - done)
        eta = f", about {duration(left)} left" if done < total else ""
        click.echo(f"adcli: corpus: {done}/{total} programs ({label}){eta}", err=True)
    return progress


@corpus.command("suggest")
@click.option("--store", required=True, metavar="DIR", help="The corpus store.")
@click.option("--no-verdicts", is_flag=True, help="The index's table only: no profiles read, no advisor.")
@click.option("--format", "fmt", type=click.Choice(formats(app.CorpusAdvice)), default="table", show_default=True)
def corpus_suggest(store, no_verdicts, fmt) -> None:
    """The library tier over the corpus: each NumPy/SciPy signature derived somewhere, in how
    many programs, its share of their gradient time, and what to do about it."""
    click.echo(render(app.corpus_suggest(store, verdicts=not no_verdicts), fmt))


@corpus.command("export")
@click.option("--store", required=True, metavar="DIR", help="The corpus store.")
@click.option("-o", "--output", required=True, metavar="FILE", help="The rules module to write.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
def corpus_export(store, output, force) -> None:
    """Write the library rules the corpus advice picks as one module an engine could ship: each
    import, each hand-write skeleton, and a test of each on a sample from the corpus."""
    result = app.corpus_export(store, output, force=force)
    if result.path is None:
        click.echo("the corpus advice picks no library rule: nothing written")
        return
    click.echo(f"wrote {result.path}: {result.imports} import(s), {result.handwritten} hand-written rule skeleton(s)"
               + (f", {result.left_out} left out (not in the engine's catalog)" if result.left_out else ""))
