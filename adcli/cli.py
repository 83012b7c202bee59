"""The ``adcli`` command line: thin click glue over the library API.

Every AdcliError becomes a one-line message on stderr and exit status 2 here, in one place;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import sys

import click

from . import __version__
from .errors import AdcliError


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except AdcliError as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(f"adcli: error: {exc}", err=True)
            ctx.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="adcli")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
def cli(debug: bool) -> None:
    """adcli: find the AD rules worth writing or importing for your NumPy program."""


FORMATS = ("table", "json")


@cli.group()
def rules() -> None:
    """Inspect the rules adcli has, derives, and can import from autograd."""


@rules.command("list")
@click.option("--source", type=click.Choice(["native", "autograd", "all"]), default="all", show_default=True,
              help="native: what the engine has (native rules, verified derivations, declared rules); "
                   "autograd: what can be imported; all: both.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format.")
def rules_list(source: str, fmt: str) -> None:
    """List rules by callable and source."""
    from .render.rules import render_list
    from .rules.listing import list_rules

    click.echo(render_list(list_rules(source), fmt))


@rules.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
def rules_show(name: str, fmt: str) -> None:
    """Show what adcli knows about one callable, e.g. `numpy.kron` or `np.linalg.cholesky`."""
    from .render.rules import render_show
    from .rules.listing import show_rule

    click.echo(render_show(show_rule(name), fmt))


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-m", "module", metavar="MODULE", default=None, help="Run a module as a script, as `python -m`.")
@click.option("-o", "--output", default="adcli-profile.json", show_default=True,
              help="Where to write the profile (JSON, with the sample inputs in a sidecar .npz).")
@click.option("--rules", "rules_files", multiple=True, type=click.Path(dir_okay=False),
              help="A rules module to load first (repeatable).")
@click.option("--include", multiple=True, metavar="GLOB",
              help="Source files that count as your code "
                   "(default: the script's folder, not the standard library or site-packages).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Source files that do not count as your code.")
@click.option("--top", default=10, show_default=True, help="Signatures in the printed summary.")
@click.option("--sort", type=click.Choice(["time", "allocations"]), default="time", show_default=True,
              help="Rank the summary by gradient time or by bytes allocated.")
@click.option("--no-replay", is_flag=True, help="Skip the isolated replays (faster; no primal or import costs).")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.argument("script", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def profile(module, output, rules_files, include, exclude, top, sort, no_replay, force, script, args) -> None:
    """Run SCRIPT (or -m MODULE) and profile every gradient it takes.

    Options after SCRIPT belong to the script, as with cProfile and pyinstrument.
    """
    import sys as _sys

    from .profiler.api import profile_program, report_error
    from .render.profile import render_summary
    from .render.progress import progress_callback

    if module is None and script is None:
        raise click.UsageError("give a SCRIPT to run, or -m MODULE")
    target, argv = (module, ([script] if script else []) + list(args)) if module else (script, list(args))
    from .profiler.api import NoGradientError

    try:
        with progress_callback() as progress:
            data, run = profile_program(target, argv, module=module is not None, output=output, rules=rules_files,
                                        include=include, exclude=exclude, replays=not no_replay, force=force,
                                        progress=progress)
    except NoGradientError as exc:  # a finding about the program, not a usage error: status 1
        click.echo(f"adcli: {exc}", err=True)
        _sys.exit(1)
    report_error(run)
    click.echo(render_summary(data, top=top, sort=sort))
    replay = f"; replays took {data['replay_s']:.1f} s" if data.get("replay_s") else ""
    click.echo(f"profile written to {output}" + (" (partial)" if data.get("partial") else "") + replay, err=True)
    if run.exit_status:
        _sys.exit(run.exit_status)


@cli.command()
@click.argument("profiles", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True)
@click.option("--sort", type=click.Choice(["saving", "time", "allocations"]), default="saving", show_default=True,
              help="Rank by the saving of the suggested rule, by derived time, or by bytes allocated.")
@click.option("--all", "show_all", is_flag=True, help="List keep-derived signatures too, with their reasons.")
@click.option("--import-burden", type=float, default=None,
              help="Least saving, as a share of the gradient time, worth importing a rule (default 0.02).")
@click.option("--handwrite-burden", type=float, default=None,
              help="Least saving, as a share of the gradient time, worth hand-writing a rule (default 0.10).")
@click.option("--import-tolerance", type=float, default=None,
              help="Advise against an import costing more than this multiple of a direct rule's estimate (default 1.5).")
@click.option("--fallback-factor", type=float, default=None,
              help="A hand-written rule's cost as a multiple of the primal when no import was measured (default 3).")
@click.option("--alloc-tolerance", type=float, default=None,
              help="Advise against an import whose peak memory exceeds this multiple of a minimal direct rule's (default 2).")
def suggest(profiles, fmt, sort, show_all, import_burden, handwrite_burden, import_tolerance, fallback_factor,
            alloc_tolerance) -> None:
    """Advise, per signature, which rules to hand-write, import, or keep derived.

    PROFILES default to adcli-profile.json; several are aggregated (which rules would serve
    all these workloads). Thresholds also come from [tool.adcli] in pyproject.toml.
    """
    from .advisor import suggest as advise
    from .advisor.config import thresholds
    from .profiler.model import load
    from .render.suggest import RENDERERS

    th = thresholds({"import_burden": import_burden, "handwrite_burden": handwrite_burden,
                     "import_tolerance": import_tolerance, "fallback_factor": fallback_factor,
                     "alloc_tolerance": alloc_tolerance})
    loaded = [load(p) for p in (profiles or ("adcli-profile.json",))]
    if not any(p["signatures"] for p in loaded):
        from .profiler.model import ProfileError

        raise ProfileError("the profile is empty: it recorded no signature (did the program take a gradient?)")
    suggestions, summary = advise(loaded, th, sort=sort)
    if not summary["derived"]:
        click.echo("nothing to suggest: every signature in the profile is already served by a rule "
                   "(native, imported or hand-written), none is derived")
        return
    shown = suggestions if show_all else [s for s in suggestions if s.action != "keep-derived"]
    if not shown and fmt != "json":
        click.echo(f"nothing to suggest: no rule would save more than its burden "
                   f"({summary['derived']} derived signature(s); --all lists them with their reasons)")
        return
    click.echo(RENDERERS[fmt](shown, summary))


@cli.command()
@click.argument("profile", required=False, default="adcli-profile.json", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, help="The rules module to write (a .py file).")
@click.option("--top", type=int, default=None, help="Export only the N best suggestions.")
@click.option("--only", type=click.Choice(["import", "hand-write"]), default=None, help="Export only one kind.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.option("--import-burden", type=float, default=None, help="As for `adcli suggest`.")
@click.option("--handwrite-burden", type=float, default=None, help="As for `adcli suggest`.")
@click.option("--import-tolerance", type=float, default=None, help="As for `adcli suggest`.")
@click.option("--alloc-tolerance", type=float, default=None, help="As for `adcli suggest`.")
def export(profile, output, top, only, force, import_burden, handwrite_burden, import_tolerance, alloc_tolerance) -> None:
    """Write the suggested rules as one Python module: finished imports, hand-write skeletons, tests."""
    import os as _os

    from . import __version__
    from .advisor import suggest as advise
    from .advisor.config import thresholds
    from .profiler.api import decode
    from .profiler.model import ProfileError, _atomic, check_writable, load, load_samples
    from .render.stubs import render_rules_module

    if _os.path.exists(output) and not force:
        raise ProfileError(f"{output} exists; pass --force to overwrite it")
    check_writable(output)
    data = load(profile)
    suggestions, _ = advise([data], thresholds({"import_burden": import_burden, "handwrite_burden": handwrite_burden,
                                                "import_tolerance": import_tolerance, "alloc_tolerance": alloc_tolerance}))
    chosen = [s for s in suggestions if s.action != "keep-derived" and (only is None or s.action == only)]
    chosen = chosen[:top] if top is not None else chosen
    if not chosen:
        click.echo("nothing to export: no import or hand-written rule is suggested (see `adcli suggest --all`)")
        return
    arrays = load_samples(profile)
    samples = {s["signature"]: [decode(a, arrays) for a in (s.get("sample") or {}).get("args", [])] or None
               for s in data["signatures"]}
    text = render_rules_module(chosen, samples, source=profile, module_file=_os.path.basename(output),
                               profile_opt=f" --profile {profile}", version=__version__)
    _atomic(output, _os.path.dirname(_os.path.abspath(output)), lambda f: f.write(text))
    kinds = {k: sum(s.action == k for s in chosen) for k in ("import", "hand-write")}
    click.echo(f"wrote {output}: {kinds['import']} import(s), {kinds['hand-write']} hand-written rule skeleton(s)")


@cli.command()
@click.argument("rules_file", type=click.Path(dir_okay=False))
@click.option("--profile", "profile_path", default=None, type=click.Path(dir_okay=False),
              help="Check on this profile's sample inputs (and load its script's functions).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def check(rules_file, profile_path, fmt) -> None:
    """Check every rule RULES_FILE declares: gradient, agreement, speed and allocations.

    Exit status 1 when a rule is wrong, crashes or is still a TODO; 0 otherwise.
    """
    import json as _json
    import sys as _sys

    from .rules.check import check_rules

    results = check_rules(rules_file, profile_path)
    if not results:
        click.echo(f"{rules_file} declares no rule")
        return
    if fmt == "json":
        click.echo(_json.dumps(results, indent=2))
    else:
        for r in results:
            click.echo(f"{r['status'].upper():5s}  {r['rule']}  [{r['source']}]" + (f"  on {r['on']}" if r["on"] else ""))
            for line in (r["report"] or "").splitlines():
                click.echo(f"       {line}")
    bad = [r for r in results if r["status"] != "ok"]
    click.echo(f"{len(results) - len(bad)} of {len(results)} rule(s) ok", err=True)
    if bad:
        _sys.exit(1)


@cli.command()
@click.argument("before", type=click.Path(dir_okay=False))
@click.argument("after", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True)
def compare(before, after, fmt) -> None:
    """Compare two profiles: per signature and in total, gradient time, allocations, who served it."""
    import json as _json

    from .profiler.compare import compare as diff
    from .profiler.model import load

    result = diff(load(before), load(after))
    if fmt == "json":
        click.echo(_json.dumps(result, indent=2))
        return

    def ms(v):
        return "—" if v is None else f"{v * 1e3:.3f}"

    def pct(v):
        return "—" if v is None else f"{v:+.0%}"

    head = ["signature", "before (ms)", "after (ms)", "change", "served before", "served after"]
    rows = [[r["signature"], ms(r["before_s"]), ms(r["after_s"]), pct(r["change"]), r["before_served_by"] or "—",
             r["after_served_by"] or "—"] for r in result["rows"]]
    total = (f"total gradient time {ms(result['total_before_s'])} ms -> {ms(result['total_after_s'])} ms "
             f"({pct(result['total_change'])})")
    if fmt == "markdown":
        lines = [f"**{total}**", "", "| " + " | ".join(head) + " |", "|---|---:|---:|---:|---|---|"]
        lines += ["| `" + r[0].replace("|", "\\|") + "` | " + " | ".join(r[1:]) + " |" for r in rows]
        click.echo("\n".join(lines))
        return
    from rich.table import Table

    from .render.rules import _capture

    table = Table(title=total, title_justify="left")
    for i, h in enumerate(head):
        table.add_column(h, justify="left" if i in (0, 4, 5) else "right")
    for r in rows:
        table.add_row(*r)
    click.echo(_capture(table))


from .cli_show import show  # noqa: E402  (the command lives in its own module)

cli.add_command(show)


def main() -> None:
    cli(prog_name="adcli")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
