"""The ``adcli`` command line: parse options, call one function of the application layer
(adcli.app), render its result (adcli.render), map errors to exit statuses. No logic here, and
nothing named below the app: the options' choices and defaults are the app's (app/options.py),
every output is a renderer's (``render``, ``notes``) and every file is written by the app
(``app.write_output``).

Exit statuses: 0 done; 1 a finding about the program or its rules (no gradient taken, a rule
wrong or still a TODO); 2 bad input (every AdcliError: one line on stderr, or the traceback with
``--debug``); 130 interrupted (Ctrl-C); ``adcli profile`` passes on the profiled program's own
non-zero status.
"""

from __future__ import annotations

import sys
from dataclasses import fields

import click

from . import app
from .cli_corpus import corpus
from .cli_types import Seconds, Size
from .errors import AdcliError
from .render import console as console_settings
from .render import formats, notes, render
from .render.progress import progress_callback
from .units import human_bytes, safe
from .version import __version__


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except app.IncompleteProfileError as exc:  # a finding about the profile, not a usage error: status 1
            click.echo(f"adcli: {safe(exc)}", err=True)
            ctx.exit(1)
        except app.NoGradientError as exc:  # a finding about the program, not a usage error: status 1
            if exc.run is not None:
                app.report_error(exc.run)  # the program's own traceback first, as Python would print it
            click.echo(f"adcli: {safe(exc)}", err=True)
            ctx.exit(exc.run.exit_status if exc.run is not None and exc.run.exit_status else 1)
        except AdcliError as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(f"adcli: error: {safe(exc)}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:  # Ctrl-C: one line and the shell's status for SIGINT, as `adcli profile` exits
            _interrupted()


def _interrupted() -> None:
    click.echo("\nadcli: interrupted", err=True)
    sys.exit(130)


def _format_option(result_type: type):
    names = formats(result_type)
    return click.option("--format", "fmt", type=click.Choice(names), default=names[0], show_default=True,
                        help="Output format.")


def _threshold_options(command):
    """One option per Thresholds field on every command that advises (suggest, export), built
    from the fields themselves: the two commands can never disagree, and a new threshold needs
    no change here."""
    for f in reversed(fields(app.Thresholds)):
        command = click.option(f"--{f.name.replace('_', '-')}", f.name, type=float, default=None,
                               help=f"{f.metadata['help']} (default {f.default}).")(command)
    return command


def _thresholds(kwargs: dict) -> dict:
    return {f.name: kwargs.pop(f.name) for f in fields(app.Thresholds)}


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="adcli")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display and no notes on standard error (errors still).")
@click.option("--color/--no-color", "color", default=None,
              help="Force ANSI styles on or off (default: on a terminal, unless NO_COLOR is set).")
def cli(debug: bool, quiet: bool, color: bool | None) -> None:
    """adcli: find the AD rules worth writing or importing for your NumPy program."""
    console_settings.QUIET = quiet
    console_settings.COLOR = color


def _out(text: str) -> None:
    """Standard output; ANSI styles kept with --color even off a terminal (click strips them)."""
    click.echo(text, color=console_settings.COLOR)


def _note(message: str) -> None:
    """An informational line on standard error (left out with --quiet)."""
    if not console_settings.QUIET:
        click.echo(message, err=True)


def _notes(lines: list) -> None:
    """A renderer's lines for standard error (render.notes): each shown even with --quiet, or a note."""
    for line, always in lines:
        click.echo(line, err=True) if always else _note(line)


@cli.group(short_help="Inspect the rules adcli has, derives and can import.")
def rules() -> None:
    """Inspect the rules adcli has, derives, and can import from autograd."""


@rules.command("list")
@click.option("--source", type=click.Choice(app.RULE_SOURCES), default="all", show_default=True,
              help="native: what the engine has (native rules, verified derivations, declared rules); "
                   "autograd: what can be imported; all: both.")
@_format_option(app.RuleListing)
def rules_list(source: str, fmt: str) -> None:
    """List rules by callable and source."""
    _out(render(app.rules_list(source), fmt))


@rules.command("show", short_help="Show what adcli knows about one callable.")
@click.argument("name")
@_format_option(app.RuleInfo)
def rules_show(name: str, fmt: str) -> None:
    """Show what adcli knows about one callable, e.g. `numpy.kron` or `np.linalg.cholesky`."""
    _out(render(app.rules_show(name), fmt))


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-m", "module", metavar="MODULE", default=None, help="Run a module as a script, as `python -m`.")
@click.option("-o", "--output", default=app.DEFAULT_PROFILE, show_default=True,
              help="Where to write the profile (JSON, with the sample inputs in a sidecar .npz).")
@click.option("--rules", "rules_files", multiple=True, type=click.Path(dir_okay=False),
              help="A rules module to load first (repeatable).")
@click.option("--include", multiple=True, metavar="GLOB",
              help="Source files that count as your code "
                   "(default: the script's folder, not the standard library or site-packages).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Source files that do not count as your code.")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
              help="Signatures in the printed summary (0: all).")
@click.option("--sort", type=click.Choice(app.PROFILE_SORTS), default="time", show_default=True,
              help="Rank the summary by gradient time or by bytes allocated.")
@click.option("--no-replay", is_flag=True, help="Skip the isolated replays (faster; no primal or import costs).")
@click.option("--replay-budget", type=Seconds(), default=app.DEFAULT_REPLAYS_TOTAL, show_default=True,
              help=f"Time for all the replays: {app.AUTO!r} is the program's own run time, at least {app.REPLAY_FLOOR_S:g} s "
                   f"and at most {app.REPLAY_CAP_S:g} s; signatures left when it runs out are not replayed (and are named).")
@click.option("--sample-budget", type=Size(), default=human_bytes(app.DEFAULT_SAMPLE_BUDGET).replace(" ", ""),
              show_default=True, help="Bytes of sample inputs kept in all (0: none; replays need samples).")
@click.option("--every-gradient", is_flag=True,
              help="Record every gradient in full (default: the first of each function handed to grad, then as many "
                   f"as keep the profiler's extra time within {app.OVERHEAD_BUDGET:.0%} of the gradient time; the rest are "
                   "timed whole and the figures scaled to all).")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.argument("script", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def profile(module, output, rules_files, include, exclude, top, sort, no_replay, replay_budget, sample_budget,
            every_gradient, force, script, args) -> None:
    """Run SCRIPT (or -m MODULE) and profile the gradients it takes.

    Options after SCRIPT belong to the script, as with cProfile and pyinstrument.
    """
    if module is None and script is None:
        raise click.UsageError("give a SCRIPT to run, or -m MODULE")
    target, argv = (module, ([script] if script else []) + list(args)) if module else (script, list(args))
    with progress_callback() as progress:
        done = app.profile(target, argv, module=module is not None, output=output, rules=rules_files,
                           include=include, exclude=exclude, replays=not no_replay, force=force, top=top, sort=sort,
                           sample_budget=sample_budget, progress=progress, replays_total=replay_budget,
                           every_gradient=every_gradient)
    app.report_error(done.run)
    data = done.view.profile
    _out(render(done.view, "table"))
    replay = f"; replays took {data.replay_s:.1f} s" if data.replay_s else ""
    for note in data.notes:
        _note(f"adcli: {safe(note)}")
    _note(f"profile written to {output}" + (" (partial)" if data.partial else "") + replay)
    if done.run.exit_status:
        sys.exit(done.run.exit_status)


@cli.command("show", short_help="Show a profile written by `adcli profile`.")
@click.argument("profile", default=app.DEFAULT_PROFILE, metavar="[PROFILE]")
@_format_option(app.ProfileView)
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
              help="Show the N most expensive signatures (0: all). table and markdown only.")
@click.option("--sort", type=click.Choice(app.PROFILE_SORTS), default="time", show_default=True,
              help="time: inclusive forward + reverse time; allocations: bytes the engine stored.")
@click.option("--speedscope", "speedscope", metavar="OUT.json", default=None,
              help="Also write the call tree as a speedscope file (https://www.speedscope.app).")
@click.option("--force", is_flag=True, help="Overwrite the --speedscope file if it exists.")
def show(profile: str, fmt: str, top: int, sort: str, speedscope: str | None, force: bool) -> None:
    """Show a profile written by `adcli profile` (default: adcli-profile.json). It only reads data."""
    view = app.show(profile, top, sort)
    if speedscope is not None:  # refused before anything is printed: no half-done output
        app.check_speedscope_target(speedscope, profile, force)
    _out(render(view, fmt))
    if speedscope is not None:
        app.write_output(speedscope, render(app.FlameGraph(view.profile), "speedscope"), force)
        _note(f"adcli: wrote {safe(speedscope)} (open it at https://www.speedscope.app)")


@cli.command(short_help="Advise which rules to hand-write, import or keep derived.")
@click.argument("profiles", nargs=-1, type=click.Path(dir_okay=False))
@_format_option(app.Advice)
@click.option("--sort", type=click.Choice(app.ADVICE_SORTS), default="saving", show_default=True,
              help="Rank by the saving of the suggested rule, by derived time, or by bytes allocated.")
@click.option("--all", "show_all", is_flag=True, help="List keep-derived signatures too, with their reasons.")
@click.option("--tier", type=click.Choice(app.TIERS), default=None,
              help="Only one tier: library (NumPy/SciPy rules, which serve every program) or user (your functions).")
@click.option("-o", "--output", default=None, metavar="FILE", help="Write the advice to FILE instead of the terminal.")
@click.option("--force", is_flag=True, help="Overwrite the --output file if it exists.")
@_threshold_options
def suggest(profiles, fmt, sort, show_all, tier, output, force, **options) -> None:
    """Advise, per signature, which rules to hand-write, import, or keep derived.

    PROFILES default to adcli-profile.json; several are aggregated (which rules would serve
    all these workloads; with --tier library, which rules an engine should ship). Thresholds
    also come from [tool.adcli] in pyproject.toml.
    """
    if output is not None:  # before any work: nothing half-done
        app.check_profiles_output(output, profiles, force)
    advice = app.advise(profiles, _thresholds(options), sort=sort, show_all=show_all, tier=tier)
    _notes(notes(advice, fmt))
    if output is None:
        _out(render(advice, fmt))
        return
    with console_settings.plain():  # a file gets no ANSI styles and the off-terminal width
        text = render(advice, fmt)
    app.write_output(output, text + "\n", force=force)
    _note(f"adcli: wrote {safe(output)}")


@cli.command(short_help="Write the suggested rules as one Python module.")
@click.argument("profile", required=False, default=app.DEFAULT_PROFILE, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, help="The rules module to write (a .py file).")
@click.option("--top", type=int, default=None, help="Export only the N best suggestions.")
@click.option("--only", type=click.Choice(app.EXPORT_KINDS), default=None, help="Export only one kind.")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.option("--tier", type=click.Choice(app.TIERS), default=None,
              help="Only one tier: library (NumPy/SciPy rules, which serve every program) or user (your functions).")
@_threshold_options
@click.option("--script", default=None, type=click.Path(dir_okay=False), metavar="SCRIPT",
              help="The profiled script: rules are written only for functions it defines, and their tests load it, "
                   "so they run under pytest. Default: the script the profile records, if that .py file is here.")
@click.option("--module", "modules", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="A module of yours (repeatable): rules for functions of modules other than the script are written "
                   "only for those a FILE defines (read, never run).")
@click.option("--synthesize/--no-synthesize", default=True, show_default=True,
              help="Write hand-write suggestions on the script's functions as rules synthesized from their source "
                   "and verified on the profile's sample (with --script); --no-synthesize: skeletons only.")
def export(profile, output, top, only, force, tier, script, modules, synthesize, **options) -> None:
    """Write the suggested rules as one Python module: finished imports, hand-write skeletons, tests.

    Only library functions adcli has rules for, and functions defined in the files you pass, are
    named in the module: a profile is data, and the callables it names are not trusted.
    """
    done = app.export(profile, output, top=top, only=only, force=force, options=_thresholds(options), tier=tier,
                      script=script, modules=modules, synthesize=synthesize)
    if done.path is None:
        click.echo("nothing to export: no import or hand-written rule is suggested (see `adcli suggest --all`)")
        return
    left_out = f"; {done.left_out} left out (see the comments in it)" if done.left_out else ""
    skeletons = done.handwritten - done.synthesized
    written = f"{done.synthesized} synthesized and verified rule(s), {skeletons} hand-written rule skeleton(s)" \
        if done.synthesized else f"{done.handwritten} hand-written rule skeleton(s)"
    click.echo(f"wrote {safe(done.path)}: {done.imports} import(s), {written}{left_out}")
    for sig, why in done.not_synthesized:
        click.echo(f"  {safe(sig)}: {safe(why)}")
    if done.recorded_script:
        click.echo(f"its tests load {safe(done.recorded_script)}, the script the profile records "
                   "(--script SCRIPT names another)")
    elif done.missing_script:
        click.echo(f"the script the profile records, {safe(done.missing_script)!r}, is not here: the tests of rules on "
                   "its functions fail until you export again with --script SCRIPT", err=True)


@cli.command(short_help="Check every rule a rules file declares.")
@click.argument("rules_file", type=click.Path(dir_okay=False))
@click.option("--profile", "profile_path", default=None, type=click.Path(dir_okay=False),
              help="Check on this profile's sample inputs.")
@click.option("--script", default=None, type=click.Path(dir_okay=False),
              help="The script whose functions rules for \"__main__:name\" serve: its definitions are loaded "
                   "(its `if __name__ == \"__main__\":` block is not run). Never taken from the profile.")
@click.option("--module", "modules", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="A module of yours (repeatable) whose functions rules may target, besides the script's and the "
                   "rules file's.")
@click.option("--sizes", default=None, metavar="1,4,16",
              help="With --profile: for each rule, time it against what it replaces (and autograd) on the recorded "
                   "sample scaled to these sizes: the table a rule's pull request carries. The arguments that share "
                   "the data's size dimension are repeated along it; the parameters stay as they are.")
@click.option("--scale", default=None, metavar="x:0,theta:none",
              help="With --sizes: which arguments to scale and along which axis, by name (or position): NAME:AXIS "
                   "or NAME:none. Arguments not named are inferred from the shapes.")
@_format_option(app.CheckReport)
def check(rules_file, profile_path, script, modules, sizes, scale, fmt) -> None:
    """Check every rule RULES_FILE declares: gradient, agreement, speed and allocations.

    OK means the rule served every checked call and passed every check; FAIL says why it did not
    serve (target not found, module imported under another name, signature mismatch). Only
    rules for library functions adcli has rules for, and for functions defined in RULES_FILE,
    --script or a --module file, are checked; any other target is refused (status 2). The
    folders of RULES_FILE and --script go first on sys.path, as `python SCRIPT` does. Exit
    status 1 when a rule is wrong, fails, crashes or is still a TODO, or none is declared.
    """
    size_list = None
    if sizes is not None:
        try:
            size_list = [int(v) for v in sizes.split(",")]
        except ValueError:
            raise click.BadParameter(f"{sizes!r}: give positive integers, e.g. 1,4,16", param_hint="--sizes") from None
        if not size_list or min(size_list) < 1 or len(size_list) > 8:
            raise click.BadParameter("give 1 to 8 positive integers, e.g. 1,4,16", param_hint="--sizes")
        if profile_path is None:
            raise click.UsageError("--sizes scales the profile's sample inputs: give --profile PROFILE too")
    if scale is not None and size_list is None:
        raise click.UsageError("--scale says how --sizes scales the samples: give --sizes too")
    axes = app.parse_scale(scale) if scale is not None else None
    report = app.check(rules_file, profile_path, script, sizes=size_list, modules=modules, scale=axes)
    _out(render(report, fmt))
    _notes(notes(report, fmt))
    if not report.results or report.failed:  # no rule declared: as pytest's "no tests collected"
        sys.exit(1)


@cli.command(short_help="Write one HTML page of the profiles and the advice.")
@click.argument("profiles", nargs=-1, type=click.Path(dir_okay=False))
@click.option("-o", "--output", default="adcli-report.html", show_default=True, metavar="FILE",
              help="The HTML file to write (self-contained: open it in any browser, offline).")
@click.option("--force", is_flag=True, help="Overwrite the output file if it exists.")
@_threshold_options
def report(profiles, output, force, **options) -> None:
    """Write one HTML page: status, signatures, AD-ratio chart, flame graphs and the advice."""
    app.check_profiles_output(output, profiles, force)  # before any work: nothing half-done
    page = render(app.report(profiles, _thresholds(options)), "html")
    app.write_output(output, page, force=force)
    _note(f"adcli: wrote {safe(output)}")


class Share(click.ParamType):
    """A percentage written as "5%" or "5": the share 0.05."""

    name = "PCT"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            share = float(str(value).strip().rstrip("%")) / 100
        except ValueError:
            self.fail(f"{value!r} is not a percentage (e.g. 5%)", param, ctx)
        if not 0 <= share < float("inf"):
            self.fail(f"{value!r} is not a non-negative percentage", param, ctx)
        return share


@cli.command(short_help="Compare two profiles; with --script, time each side with repeats.")
@click.argument("before", type=click.Path(dir_okay=False))
@click.argument("after", type=click.Path(dir_okay=False))
@click.option("--script", default=None, type=click.Path(dir_okay=False),
              help="The profiled script: time the gradients of the functions it hands to grad on the profiles' "
                   "samples, without and with the --rules files, in turn, with repeats (its definitions are loaded, "
                   "its `if __name__ == \"__main__\":` block is not run). Never taken from the profile.")
@click.option("--rules", "rules_files", multiple=True, type=click.Path(dir_okay=False),
              help="A rules file AFTER was profiled with (repeatable): in for the after side, out for the before.")
@click.option("--module", "modules", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="A module of yours (repeatable) whose functions the program hands to grad, besides the script's.")
@click.option("--budget", type=Seconds(), default=app.COMPARE_BUDGET_S, show_default=True,
              help="Seconds of timing, both sides together (at least 5 rounds).")
@click.option("--fail-if-slower", "fail_if_slower", type=Share(), default=None, metavar="PCT",
              help="With --script: exit status 1 when the after side is slower beyond noise by more than PCT "
                   "(e.g. 5%), for CI.")
@_format_option(app.Comparison)
def compare(before, after, script, rules_files, modules, budget, fail_if_slower, fmt) -> None:
    """Compare two profiles: per signature and in total, gradient time, allocations, who served it.

    Each profile is one run of the program, within a shared machine's noise. With --script (and
    --rules, the rules AFTER was profiled with), each side is timed again with repeats: the change
    is printed as a range, "within noise" when the sides' ranges overlap.
    """
    if fail_if_slower is not None and script is None:
        raise click.UsageError("--fail-if-slower needs the sides timed with repeats: give --script SCRIPT "
                               "(and --rules FILE)")
    result = app.compare(before, after, script, rules_files, modules, budget)
    _out(render(result, fmt))
    if fail_if_slower is not None and result.slower_beyond(fail_if_slower):
        low, _ = result.timing.change
        click.echo(f"adcli: the after side is slower beyond noise by {low:.0%} at least, more than "
                   f"--fail-if-slower {fail_if_slower:.0%}", err=True)
        sys.exit(1)


cli.add_command(corpus)


def main() -> None:
    """Run the command line; Ctrl-C anywhere (parsing the options too, where click would say
    "Aborted!" with status 1) exits 130 with one line."""
    try:
        status = cli.main(prog_name="adcli", standalone_mode=False)
    except click.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _interrupted()
        click.echo("Aborted!", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted()
    sys.exit(status if isinstance(status, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
