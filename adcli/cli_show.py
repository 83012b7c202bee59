"""``adcli show``: render a saved profile. It only reads data (model.load); it never runs code."""

from __future__ import annotations

import json
import os
import tempfile

import click

from .profiler.model import ProfileError, check_writable, load
from .render.profile import SORTS, render_json, render_markdown, render_speedscope, render_summary

SHOW_FORMATS = ("table", "json", "markdown")


@click.command("show")
@click.argument("profile", default="adcli-profile.json", metavar="[PROFILE]")
@click.option("--format", "fmt", type=click.Choice(SHOW_FORMATS), default="table", show_default=True,
              help="Output format.")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
              help="Show the N most expensive signatures (0: all). table and markdown only.")
@click.option("--sort", type=click.Choice(SORTS), default="time", show_default=True,
              help="time: inclusive forward + reverse time; allocations: bytes the engine stored.")
@click.option("--speedscope", "speedscope", metavar="OUT.json", default=None,
              help="Also write the call tree as a speedscope file (https://www.speedscope.app).")
@click.option("--force", is_flag=True, help="Overwrite the --speedscope file if it exists.")
def show(profile: str, fmt: str, top: int, sort: str, speedscope: str | None, force: bool) -> None:
    """Show a profile written by `adcli profile` (default: adcli-profile.json)."""
    data = load(profile)
    if speedscope is not None:
        # Checked before printing anything, so a refusal leaves no half-done output behind.
        _check_target(speedscope, profile, force)
    if fmt == "json":
        click.echo(render_json(data))
    elif fmt == "markdown":
        click.echo(render_markdown(data, top, sort))
    else:
        click.echo(render_summary(data, top, sort))
    if speedscope is not None:
        _write_atomic(speedscope, json.dumps(render_speedscope(data)))
        click.echo(f"adcli: wrote {speedscope} (open it at https://www.speedscope.app)", err=True)


def _check_target(out: str, profile: str, force: bool) -> None:
    if os.path.lexists(out):
        if os.path.exists(profile) and os.path.samefile(out, profile):
            raise ProfileError(f"refusing to write the speedscope file over the profile itself ({out})")
        if not force:
            raise ProfileError(f"{out} already exists (pass --force to overwrite it)")
    check_writable(out)


def _write_atomic(path: str, text: str) -> None:
    """A temporary file in the target's folder, then a rename: readers never see half a file."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".adcli-", suffix=".tmp", dir=folder)
    try:
        # mkstemp makes the file private (0600); an exported profile is an ordinary file.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        _unlink(tmp)
        raise ProfileError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
