"""The profile file: save/load round trip, and every way a file can be unreadable raising a
one-line ProfileError (never a traceback, never code execution). Profiles are built by hand."""

import copy
import json
import os

import numpy as np
import pytest

from adcli.data import model, store
from adcli.data.model import Profile
from adcli.data.schema import ProfileError
from adcli.errors import AdcliError


def _allocs(fa=0, fb=0, ra=0, rb=0):
    return {"forward": [fa, fb], "reverse": [ra, rb]}


def _sig(id, signature, kind, served_by, calls, fwd, self_fwd, rev, self_rev, prims, allocs, *, location="",
         replay=None, sample=None):
    return {
        "id": id, "signature": signature, "function": signature.split("(")[0], "kind": kind,
        "served_by": served_by, "served_counts": {served_by: calls}, "location": location, "calls": calls,
        "forward_s": fwd, "self_forward_s": self_fwd, "reverse_s": rev, "self_reverse_s": self_rev,
        "primitives": prims, "self_primitives": prims, "allocs": allocs, "self_allocs": allocs,
        "replay": replay, "sample": sample,
    }


def _node(sig, src, children=()):
    keys = ("calls", "forward_s", "self_forward_s", "reverse_s", "self_reverse_s", "primitives",
            "self_primitives", "allocs", "self_allocs")
    return {"sig": sig, **{k: copy.deepcopy(src[k]) for k in keys}, "children": list(children)}


def make_profile(partial=False):
    """A user function calling numpy.kron (most time, few bytes) and numpy.sum (little time,
    more bytes), so sorting by time and by allocations give different orders."""
    loss = _sig(1, "__main__.loss(f64[2d])", "user", "derived", 2, 0.010, 0.003, 0.004, 0.0015, 6,
                _allocs(3, 3000, 2, 1600), location="model.py:12")
    kron = _sig(2, "numpy.kron(f64[2d,strided], f64[2d])", "numpy", "derived", 2, 0.006, 0.006, 0.002, 0.002, 3,
                _allocs(1, 800), replay={"derived_s": 0.008, "primal_s": 0.001, "ratio": 8.0, "repeats": 7,
                                         "imports": [{"rule": "autograd numpy.kron", "rule_s": 0.002, "agrees": True,
                                                      "max_rel_diff": None, "error": None}]},
                sample={"args": [{"array": "s2_a0"}, {"array": "s2_a1"}], "kwargs": {}})
    total = _sig(3, "numpy.sum(f64[2d])", "numpy", "native", 2, 0.001, 0.001, 0.0005, 0.0005, 2,
                 _allocs(2, 2200, 2, 1600))
    root = _node(0, {**loss, "calls": 0, "self_forward_s": 0.0, "self_reverse_s": 0.0, "self_primitives": 0,
                     "self_allocs": _allocs()},
                 [_node(1, loss, [_node(2, kron), _node(3, total)])])
    return {
        "schema": "adcli-profile", "version": 1, "command": ["model.py", "--n", "3"],
        "created": "2026-12-02T12:00:00+00:00", "adcli_version": "0.1.0", "partial": partial,
        "exit_status": 130 if partial else 0,
        "totals": {"gradients": 2, "forward_s": 0.011, "reverse_s": 0.0045, "gradient_s": 0.0155},
        "signatures": [loss, kron, total], "tree": root,
    }


def write(tmp_path, text, name="p.json"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def raises_one_line(path, *fragments):
    with pytest.raises(ProfileError) as info:
        store.load(path)
    msg = str(info.value)
    assert "\n" not in msg and msg
    for f in fragments:
        assert f in msg, msg
    return msg


def test_profile_error_is_an_adcli_error():
    assert issubclass(ProfileError, AdcliError)


def test_save_load_round_trip(tmp_path):
    profile = Profile.from_json(make_profile())
    path = str(tmp_path / "prof.json")
    store.save(profile, path, samples={})
    assert store.load(path) == profile
    assert os.path.exists(store.sidecar(path))
    assert store.load_samples(path) == {}


def test_json_round_trip_is_exact():
    profile = Profile.from_json(make_profile())
    again = Profile.from_json(json.loads(json.dumps(profile.to_json())))
    assert again == profile and again.to_json() == profile.to_json()
    assert profile.to_json()["version"] == model.VERSION


def test_samples_round_trip(tmp_path):
    path = str(tmp_path / "prof.json")
    a, b = np.arange(6.0).reshape(2, 3), np.eye(2, dtype=np.float32)
    store.save(Profile.from_json(make_profile()), path, samples={"s2_a0": a, "s2_a1": b})
    got = store.load_samples(path)
    assert set(got) == {"s2_a0", "s2_a1"}
    np.testing.assert_array_equal(got["s2_a0"], a)
    assert got["s2_a1"].dtype == np.float32


def test_missing_sidecar_means_no_samples(tmp_path):
    path = write(tmp_path, json.dumps(make_profile()))
    assert store.load_samples(path) == {}


def test_save_leaves_no_temporary_files(tmp_path):
    store.save(Profile.from_json(make_profile()), str(tmp_path / "prof.json"), samples={"x": np.ones(3)})
    assert sorted(os.listdir(tmp_path)) == ["prof.json", "prof.npz"]


def test_missing_file(tmp_path):
    raises_one_line(str(tmp_path / "nope.json"), "no profile at", "nope.json")


def test_corrupt_file(tmp_path):
    text = json.dumps(make_profile()).replace('"signatures"', '"signatures" oops', 1)
    raises_one_line(write(tmp_path, text), "not a valid profile", "JSON")


def test_truncated_file(tmp_path):
    text = json.dumps(make_profile(), indent=1)
    for cut in (len(text) // 2, len(text) - 1):
        raises_one_line(write(tmp_path, text[:cut]), "not a valid profile", "JSON")


def test_empty_file(tmp_path):
    raises_one_line(write(tmp_path, ""), "not a valid profile")


def test_binary_file(tmp_path):
    path = tmp_path / "p.json"
    path.write_bytes(b"\xff\xfe\x00garbage\x80")
    raises_one_line(str(path), "p.json")


@pytest.mark.parametrize("doc", [{"a": 1}, [1, 2], "adcli-profile", None, {"schema": "other", "version": 1}])
def test_foreign_json(tmp_path, doc):
    raises_one_line(write(tmp_path, json.dumps(doc)), "is not an adcli profile")


def test_newer_version_is_refused(tmp_path):
    profile = make_profile()
    profile["version"] = model.VERSION + 1
    msg = raises_one_line(write(tmp_path, json.dumps(profile)), "newer adcli")
    assert str(model.VERSION + 1) in msg and str(model.VERSION) in msg


def test_version_must_be_an_integer(tmp_path):
    profile = make_profile()
    profile["version"] = "1"
    raises_one_line(write(tmp_path, json.dumps(profile)), "'version'")


@pytest.mark.parametrize("field, value", [("calls", "2"), ("forward_s", None), ("id", 1.5), ("signature", 7),
                                          ("allocs", [1, 2]), ("primitives", True)])
def test_wrong_signature_field_type(tmp_path, field, value):
    profile = make_profile()
    profile["signatures"][1][field] = value
    raises_one_line(write(tmp_path, json.dumps(profile)), f"signatures[1].{field}")


@pytest.mark.parametrize("field, value", [("totals", []), ("signatures", {}), ("tree", None)])
def test_wrong_top_level_field_type(tmp_path, field, value):
    profile = make_profile()
    profile[field] = value
    raises_one_line(write(tmp_path, json.dumps(profile)), repr(field))


def test_tree_referring_to_an_unknown_signature(tmp_path):
    profile = make_profile()
    profile["tree"]["children"][0]["children"][0]["sig"] = 99
    raises_one_line(write(tmp_path, json.dumps(profile)), "call tree is malformed")


def test_load_samples_refuses_pickled_objects_without_running_them(tmp_path):
    marker = tmp_path / "unpickled-marker"

    class Payload:  # unpickling this would create `marker`
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = write(tmp_path, json.dumps(make_profile()))
    arr = np.empty(1, dtype=object)
    arr[0] = Payload()
    np.savez(store.sidecar(path), s2_a0=arr, allow_pickle=True)
    with pytest.raises(ProfileError) as info:
        store.load_samples(path)
    assert "\n" not in str(info.value) and ".npz" in str(info.value)
    assert not marker.exists()


def test_load_samples_corrupt_zip(tmp_path):
    path = write(tmp_path, json.dumps(make_profile()))
    with open(store.sidecar(path), "wb") as f:
        f.write(b"PK\x03\x04 not really a zip")
    with pytest.raises(ProfileError):
        store.load_samples(path)


def test_deeply_nested_file(tmp_path):
    deep = '{"sig": 0, "children": [' * 3000 + '{"sig": 0, "children": []}' + "]}" * 3000
    text = '{"schema": "adcli-profile", "version": 1, "totals": {}, "signatures": [], "tree": ' + deep + "}"
    raises_one_line(write(tmp_path, text), "p.json")


@pytest.mark.parametrize("patch,message", [
    ({"version": True}, "version"),
    ({"version": 0}, "version"),
    ({"totals": {}}, "totals.gradients"),
    ({"partial": "yes"}, "partial"),
])
def test_values_of_the_wrong_kind_are_refused(tmp_path, patch, message):
    import json as _json

    from adcli.data import model as _model

    data = _minimal_profile()
    data.update(patch)
    path = tmp_path / "p.json"
    path.write_text(_json.dumps(data))
    with pytest.raises(_model.ProfileError, match=message):
        store.load(str(path))


def _minimal_profile():
    return {
        "schema": "adcli-profile", "version": 1, "partial": False,
        "totals": {"gradients": 1, "forward_s": 0.1, "reverse_s": 0.1, "gradient_s": 0.2},
        "signatures": [], "tree": {"sig": 0, "children": []},
    }


# --- docs/profile-format.md is checked against what Profile.to_json writes ---------------------

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "profile-format.md")


def _doc_tables() -> dict:
    """The fields each table of the format page documents, keyed by the heading above it."""
    import re

    tables, heading, rows = {}, None, None
    for line in open(DOC, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("#") or line.startswith("Each `imports[]` entry"):
            heading, rows = line.lstrip("# ").strip(), None
            continue
        if line.startswith("| field |"):
            rows = tables.setdefault(heading, set())
            continue
        if rows is not None and line.startswith("|") and not line.startswith("|---"):
            rows.update(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
        elif rows is not None and not line.startswith("|"):
            rows = None
    return tables


def _full_document() -> dict:
    """A profile with every optional part present: a replay with an import trial, a sample."""
    doc = make_profile()
    doc["signatures"][1]["replay"].update({"derived_peak_bytes": 100, "direct_bytes_estimate": 50,
                                           "direct_floor_s": 0.001})
    doc["signatures"][1]["replay"]["imports"][0].update({"rule_peak_bytes": 80, "verification": "fd"})
    return Profile.from_json(doc).to_json()


def test_the_format_page_documents_exactly_the_fields_written():
    tables, doc = _doc_tables(), _full_document()
    sig = doc["signatures"][1]
    written = {
        "Top level": set(doc),
        "`totals`": set(doc["totals"]),
        "`signatures[]`": set(sig),
        "`replay`": set(sig["replay"]),
        "Each `imports[]` entry:": set(sig["replay"]["imports"][0]),
        "`tree`": set(doc["tree"][0]),
    }
    for heading, fields in written.items():
        assert tables.get(heading) == fields, heading


def test_signatures_left_out_by_the_replay_budget_make_a_profile_incomplete_only_above_a_share():
    # the replays go largest first: what the budget leaves out is the smallest; over 5% of the
    # gradient time the profile is incomplete, under it a note names them and the advice stands
    from adcli.data.model import UNREPLAYED_SHARE, Profile
    from tests.test_advisor import node, profile, sig

    p = Profile.from_json(profile([sig(1, "__main__.f(f64[1d])", kind="user", time=1.0, derived=0.5, primal=0.1)],
                                  node(0, 0, [node(1, 1)]), total=1.0))
    p.unreplayed = 2
    p.unreplayed_s = None  # a profile from before the seconds were recorded: incomplete, as before
    assert any("2 signature(s) not replayed" in x for x in p.problems())
    p.unreplayed_s = 0.5 * UNREPLAYED_SHARE * p.totals.gradient_s
    assert not any("not replayed" in x for x in p.problems())
    p.unreplayed_s = 2 * UNREPLAYED_SHARE * p.totals.gradient_s
    assert any("2 signature(s) not replayed" in x for x in p.problems())
    again = Profile.from_json(p.to_json())
    assert again.unreplayed_s == p.unreplayed_s and again.problems() == p.problems()
