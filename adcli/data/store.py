"""Profile files: the JSON document and its sidecar ``.npz`` of sample arrays, saved as a pair.

Saving writes both to temporary files first (a failure leaves the old pair untouched), then
publishes both under a lock on their folder. Both carry the same random ``pair`` id; loading
the samples checks it, so a JSON from one run is never read with another run's arrays.

Loading never executes code and never trusts a size: the JSON is read only up to
``MAX_PROFILE_BYTES`` and ``MAX_JSON_VALUES`` values, with no integer over ``MAX_INT`` in
magnitude (fields.py; docs/profile-format.md § Limits), then validated by
``Profile.from_json``; the sidecar must be a regular zip file, each array is read only when a
sample needs it, only if stored or deflated (decompressed in bounded steps), its ``.npy`` header
is checked (no object dtype, no negative length, at most ``MAX_NDIM`` dimensions and
``MAX_ARRAY_BYTES``) before any data is decompressed, and at most that many bytes are
decompressed in all.
"""

from __future__ import annotations

import json
import os
import stat
import uuid
import zipfile
import zlib

import numpy as np

from ..fileio import OutputError, publish, stage
from .model import Profile
from .schema import MAX_INT, MAX_JSON_VALUES, MAX_PROFILE_BYTES, ProfileError

PAIR_KEY = "__pair__"
MAX_ARRAY_BYTES = 400_000_000  # one sample array, and all of them read in one session
MAX_NDIM = 32  # dimensions of a sample array (NumPy's own limit is 64)


def sidecar(path: str) -> str:
    """The ``.npz`` that holds a profile's sample arrays."""
    root, _ = os.path.splitext(path)
    return root + ".npz"


def save(profile: Profile, path: str, samples: dict, force: bool = True) -> None:
    """Write ``path`` (JSON) and its ``.npz`` of sample arrays as one pair (see above); without
    ``force``, OutputError if either exists by the time they are published."""
    if sidecar(path) == path:
        raise OutputError(f"cannot write a profile to {path}: it would be its own sample file (.npz); "
                          "name the profile .json")
    profile.pair = uuid.uuid4().hex
    text = json.dumps(profile.to_json(), indent=1)  # before any file is touched
    arrays = {**samples, PAIR_KEY: np.array(profile.pair)}
    npz = stage(sidecar(path), lambda f: np.savez_compressed(f, **arrays), binary=True, like=(path,))
    try:
        doc = stage(path, lambda f: f.write(text), like=(sidecar(path),))
    except BaseException:
        os.unlink(npz)
        raise
    publish([(npz, sidecar(path)), (doc, path)], force)


def load(path: str) -> Profile:
    """Read and validate a profile (the JSON only; see Samples). Raises ProfileError."""
    _regular(path, f"no profile at {path} (run `adcli profile SCRIPT` first)")
    too_big = ProfileError(f"{path} is not a valid profile (over {MAX_PROFILE_BYTES // 2**20} MiB, the most adcli reads: "
                           "docs/profile-format.md § Limits)")
    try:
        if os.path.getsize(path) > MAX_PROFILE_BYTES:
            raise too_big
        text = _read_text(path, MAX_PROFILE_BYTES + 1)  # a file that grew since: no more characters than bytes
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read {path}: {exc}") from None
    if len(text) > MAX_PROFILE_BYTES:
        raise too_big
    values = text.count(",") + text.count("[") + text.count("{")  # an upper bound on the parsed values
    if values > MAX_JSON_VALUES:
        raise ProfileError(f"{path} is not a valid profile (over {MAX_JSON_VALUES} JSON values, the most adcli reads: "
                           "docs/profile-format.md § Limits)")
    try:
        data = json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        stripped = text.lstrip()
        if not stripped.startswith(("{", "[")):  # not JSON at all (text, binary, another format)
            what = "not JSON" if stripped else "an empty file"
            raise ProfileError(f"{path} is not a valid profile ({what}: a profile is the JSON `adcli profile` writes)") \
                from None
        # a file cut short ends without closing its outermost object
        what = "truncated" if not text.rstrip().endswith(("}", "]")) else "corrupt"
        raise ProfileError(f"{path} is not a valid profile ({what} JSON at line {exc.lineno}, column {exc.colno}: "
                           f"{exc.msg})") from None
    except ValueError as exc:  # an integer out of bounds (_bounded_int)
        raise ProfileError(f"{path} is not a valid profile ({exc})") from None
    except RecursionError:
        raise ProfileError(f"{path} is not a valid profile (nested too deeply)") from None
    return Profile.from_json(data, path)


def _read_text(path: str, limit: int) -> str:
    """At most ``limit`` characters of a UTF-8 file, read in steps (``read(limit)`` would
    allocate the whole limit up front, however small the file)."""
    parts, size = [], 0
    with open(path, encoding="utf-8") as f:
        while size < limit:
            part = f.read(min(2**20, limit - size))
            if not part:
                break
            parts.append(part)
            size += len(part)
    return "".join(parts)


def _bounded_int(text: str) -> int:
    """A JSON integer, refused (ValueError) beyond MAX_INT in magnitude before it is converted:
    no field holds more, and a 400-digit one would overflow every float it meets."""
    n = int(text) if len(text) <= 21 else None
    if n is None or not -MAX_INT <= n <= MAX_INT:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits, over 2**64 in magnitude")
    return n


def _regular(path: str, missing: str) -> bool:
    """True if ``path`` is a regular file; raise ProfileError if it is anything else (a FIFO
    or a device would block or never end); ``missing`` is the error for a path that is absent."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ProfileError(missing) from None
    except OSError as exc:
        raise ProfileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ProfileError(f"cannot read {path}: it is not a regular file")
    return True


class Samples:
    """A profile's sample arrays, read one by one when asked for (``get``), within the limits
    above. A profile without a sidecar has no samples (``get`` returns the default)."""

    def __init__(self, path: str, profile: Profile | None = None, limit: int = MAX_ARRAY_BYTES):
        self.path = sidecar(path)
        self.limit = limit
        self.read = 0
        self.members: dict = {}
        self.zip = None
        if not os.path.lexists(self.path):
            return
        _regular(self.path, f"no sample file {self.path}")
        try:
            self.zip = zipfile.ZipFile(self.path)
            self.members = {i.filename[:-4]: i for i in self.zip.infolist() if i.filename.endswith(".npy")}
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise ProfileError(f"cannot read the sample inputs {self.path}: {exc}") from None
        if profile is not None and profile.pair:
            got = self._array(PAIR_KEY) if PAIR_KEY in self.members else None
            if got is None or got.shape != () or str(got) != profile.pair:
                raise ProfileError(f"{self.path} belongs to another run than {path} (their pair ids differ): "
                                   "re-run `adcli profile`, or remove the .npz to use the profile without samples")

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def keys(self):
        return [k for k in self.members if k != PAIR_KEY]

    def get(self, key: str, default=None):
        if key == PAIR_KEY or key not in self.members:
            return default
        return self._array(key)

    def __getitem__(self, key: str):
        value = self.get(key, _ABSENT)
        if value is _ABSENT:
            raise KeyError(key)
        return value

    def _array(self, key: str) -> np.ndarray:
        info = self.members[key]
        if info.compress_type not in _BOUNDED:
            raise ProfileError(f"cannot read the sample inputs {self.path}: array {key!r} is compressed in a way "
                               "adcli does not read (only stored or deflated members, as numpy.savez writes)")
        try:
            with self.zip.open(info) as f:
                version = np.lib.format.read_magic(f)
                reader = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
                if version not in reader:
                    raise ValueError(f"unsupported .npy version {version}")
                shape, fortran, dtype = reader[version](f)
                if dtype.hasobject:
                    raise ValueError("an object array (adcli never unpickles)")
                if len(shape) > MAX_NDIM or not all(isinstance(n, int) and n >= 0 for n in shape):
                    # (-1, -250000000) multiplies out to 2 GB: every length is checked first
                    raise ValueError(f"array {key!r} declares the shape {shape!r} (at most {MAX_NDIM} dimensions, "
                                     "none negative)")
                count = int(np.prod(shape, dtype=object))
                nbytes = count * dtype.itemsize
                if nbytes > self.limit - self.read:
                    raise ValueError(f"array {key!r} declares {nbytes} bytes, over the limit of {self.limit}")
                data = f.read(nbytes)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
                RuntimeError, KeyError, TypeError, OverflowError) as exc:
            raise ProfileError(f"cannot read the sample inputs {self.path}: {exc}") from None
        if len(data) != nbytes:
            raise ProfileError(f"cannot read the sample inputs {self.path}: array {key!r} is truncated")
        self.read += nbytes
        try:
            array = np.frombuffer(data, dtype=dtype, count=count).reshape(shape, order="F" if fortran else "C")
        except ValueError as exc:  # e.g. an empty array whose other dimensions overflow
            raise ProfileError(f"cannot read the sample inputs {self.path}: array {key!r}: {exc}") from None
        return array.copy()


_ABSENT = object()
# zipfile decompresses these members in bounded steps; a bzip2 or LZMA member is expanded
# whole on its first read, so a 10 kB member could take gigabytes before any size is checked
_BOUNDED = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


def load_samples(path: str, profile: Profile | None = None) -> dict:
    """Every sample array of a profile, read as ``Samples`` reads them (for small profiles and
    tests; ``Samples`` reads only what is asked for)."""
    with Samples(path, profile) as s:
        return {k: s[k] for k in s.keys()}

