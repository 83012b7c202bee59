"""Where every command's text output goes (``suggest -o``, ``export``, ``report``, ``show
--speedscope``): refused before any work when it would replace one of the command's inputs or,
without ``--force``, any file (``check_output``), then written by ``write_output``, atomically
(fileio): a reader sees the old file or the new one, and a file made there while the command ran
is kept. The profile, a JSON and its ``.npz`` written as a pair, is the one other output
(profiler.api.save_profile, data/store.py), on the same fileio primitives.
"""

from __future__ import annotations

from ..data.store import sidecar
from ..fileio import OutputError, check_writable, refuse_inputs, same_file, write_text
from .advice import DEFAULT_PROFILE


def check_output(out: str, inputs: list, force: bool) -> None:
    """Refuse before any work or output: never over an input, never over a file without ``force``."""
    refuse_inputs(out, inputs)
    check_writable(out, force)


def check_profiles_output(out: str, profiles, force: bool) -> None:
    """``check_output`` for a command that reads ``profiles`` (default: adcli-profile.json): each
    profile and its sample file are its inputs."""
    check_output(out, _with_samples(profiles or (DEFAULT_PROFILE,)), force)


def check_speedscope_target(out: str, profile: str, force: bool) -> None:
    """Refuse before anything is printed: never over the profile or its samples, never over a
    file without ``force``."""
    if same_file(out, profile):
        raise OutputError(f"refusing to write the speedscope file over the profile itself ({out})")
    check_output(out, _with_samples([profile]), force)


def write_output(path: str, text: str, force: bool = False) -> None:
    """Write a command's output ``text`` at ``path`` atomically; without ``force``, never over a
    file, one made there while the command ran included."""
    write_text(path, text, force=force)


def _with_samples(paths) -> list:
    return [f for p in paths for f in (p, sidecar(p))]
