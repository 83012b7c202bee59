"""Profile files: the JSON document and its sidecar ``.npz`` of sample arrays.

Loading never executes code: the JSON is parsed and validated by ``Profile.from_json``, and
the sample arrays are read with ``np.load(..., allow_pickle=False)``.
"""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np

from ..fileio import atomic_write
from .model import Profile, ProfileError


def sidecar(path: str) -> str:
    """The ``.npz`` that holds a profile's sample arrays."""
    root, _ = os.path.splitext(path)
    return root + ".npz"


def save(profile: Profile, path: str, samples: dict) -> None:
    """Write ``path`` (JSON) and its ``.npz`` of sample arrays, each atomically."""
    atomic_write(sidecar(path), lambda f: np.savez_compressed(f, **samples), binary=True)
    text = json.dumps(profile.to_json(), indent=1)
    atomic_write(path, lambda f: f.write(text))


def load(path: str) -> Profile:
    """Read and validate a profile (the JSON only; see load_samples). Raises ProfileError."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ProfileError(f"no profile at {path} (run `adcli profile SCRIPT` first)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # a file cut short ends without closing its outermost object
        what = "truncated" if not text.rstrip().endswith("}") else "corrupt"
        raise ProfileError(f"{path} is not a valid profile ({what} JSON at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise ProfileError(f"{path} is not a valid profile (nested too deeply)") from None
    return Profile.from_json(data, path)


def load_samples(path: str) -> dict:
    """The sample arrays of a profile, without unpickling anything."""
    npz = sidecar(path)
    if not os.path.exists(npz):
        return {}
    try:
        with np.load(npz, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ProfileError(f"cannot read the sample inputs {npz}: {exc}") from None
