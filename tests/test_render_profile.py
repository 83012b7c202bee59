"""Rendering a profile (table, markdown, JSON, speedscope) and `adcli show`. Profiles are built
by hand (tests/test_profile_model.make_profile); nothing here runs the profiler."""

import json
import os

import pytest
from click.testing import CliRunner

from adcli.cli import cli
from adcli.data import store
from adcli.data.model import Profile
from adcli.data.schema import ProfileError
from adcli.render.profile import render_json, render_markdown, render_speedscope, render_summary
from adcli.units import human_bytes
from tests.test_profile_model import make_profile as make_document


def make_profile(partial=False):
    return Profile.from_json(make_document(partial))

LOSS, KRON, SUM = "__main__.loss(f64[2d])", "numpy.kron(f64[2d,strided], f64[2d])", "numpy.sum(f64[2d])"


@pytest.fixture(autouse=True)
def plain_output(monkeypatch):
    """As when piped: no terminal, so no colour and a fixed width, whatever runs the tests."""
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    monkeypatch.delenv("NO_COLOR", raising=False)


def test_a_root_entry_among_the_signatures_is_refused():
    # The program is not a signature: a document that lists it as one is not a valid profile.
    doc = make_document()
    doc["signatures"].append({**doc["signatures"][0], "id": 4, "signature": "<program>", "kind": "root"})
    with pytest.raises(ProfileError):
        Profile.from_json(doc)


# --- summary table ---------------------------------------------------------------------------


def test_summary_lists_signatures_by_inclusive_time():
    out = render_summary(make_profile())
    assert out.index(LOSS) < out.index(KRON) < out.index(SUM)
    assert "<program>" not in out
    for col in ("signature", "served", "calls", "fwd", "rev", "prims", "allocs", "primal", "AD"):
        assert col in out
    assert "15.5 ms in 2 gradients" in out
    assert "INCOMPLETE" not in out
    assert "\x1b" not in out


def test_summary_cells():
    line = next(row for row in render_summary(make_profile()).splitlines() if KRON in row)
    cells = [c.strip() for c in line.split("│")[1:-1]]
    assert cells == ["2", KRON, "derived", "2", "6 ms", "2 ms", "3", "1 (800 B)", "1 ms", "8.0×"]
    line = next(row for row in render_summary(make_profile()).splitlines() if SUM in row)
    assert [c.strip() for c in line.split("│")[1:-1]][-3:] == ["4 (3.8 kB)", "—", "—"]


def test_summary_top_n():
    out = render_summary(make_profile(), top=2)
    assert LOSS in out and KRON in out and SUM not in out
    assert "2 of 3 signatures" in out
    assert SUM in render_summary(make_profile(), top=0)


def test_sort_by_allocations_changes_the_order():
    by_time = render_summary(make_profile(), sort="time")
    by_bytes = render_summary(make_profile(), sort="allocations")
    assert by_time.index(KRON) < by_time.index(SUM)
    assert by_bytes.index(SUM) < by_bytes.index(KRON)
    assert SUM in render_summary(make_profile(), top=2, sort="allocations")
    with pytest.raises(ValueError):
        render_summary(make_profile(), sort="calls")


def test_partial_marker():
    out = render_summary(make_profile(partial=True))
    assert "INCOMPLETE: interrupted (Ctrl-C)" in out


def test_no_color_on_a_terminal_has_no_ansi(monkeypatch):
    monkeypatch.setattr(os, "isatty", lambda fd: True)
    monkeypatch.setenv("COLUMNS", "160")  # the terminal's width, as rich reads it
    assert "\x1b[" in render_summary(make_profile())  # the terminal does get styles...
    monkeypatch.setenv("NO_COLOR", "1")
    out = render_summary(make_profile())
    assert "\x1b" not in out and KRON in out  # ...unless NO_COLOR says otherwise


def test_missing_optional_fields_still_render():
    doc = make_document()
    for s in doc["signatures"]:
        for key in ("replay", "served_counts", "location", "self_allocs", "sample"):
            s.pop(key)
    doc["signatures"][0]["replay"] = {"error": "no sample inputs"}
    del doc["partial"], doc["command"]
    profile = Profile.from_json(doc)
    assert KRON in render_summary(profile) and KRON in render_markdown(profile)
    assert render_speedscope(profile)["profiles"]


def test_human_bytes():
    assert [human_bytes(n) for n in (0, 999, 1000, 1234, 5_120_000, 999_960, 3 * 10**9)] == [
        "0 B", "999 B", "1.0 kB", "1.2 kB", "5.1 MB", "1.0 MB", "3.0 GB"]


# --- markdown and json -----------------------------------------------------------------------


def _md_cells(line):
    return [c.strip() for c in line.replace("\\|", "\0").split("|")[1:-1]]


def test_markdown_table_shape():
    doc = make_document()
    doc["signatures"][2]["signature"] = "numpy.sum(f64[2d], where=dict{'a|b': int})"  # a pipe must be escaped
    profile = Profile.from_json(doc)
    out = render_markdown(profile, top=2, sort="allocations")
    lines = out.splitlines()
    assert lines[0].startswith("**Gradient time:**") and "15.5 ms" in lines[0]
    rows = [line for line in lines if line.startswith("|")]
    assert len(rows) == 2 + 2
    widths = {len(_md_cells(r)) for r in rows}
    assert widths == {10}
    assert _md_cells(rows[0])[:3] == ["#", "signature", "served by"]
    assert set(_md_cells(rows[1])) <= {"---", "---:"}
    assert _md_cells(rows[2])[1] == f"`{LOSS}`"
    assert "'a\\|b'" in rows[3]
    assert "2 of 3 signatures" in lines[-1]


def test_markdown_partial():
    assert "INCOMPLETE" in render_markdown(make_profile(partial=True), 10, "time").splitlines()[0]


def test_json_round_trip():
    profile = make_profile()
    assert Profile.from_json(json.loads(render_json(profile))) == profile


# --- speedscope ------------------------------------------------------------------------------


def validate_speedscope(doc):
    """The parts of https://www.speedscope.app/file-format-schema.json speedscope relies on, for
    evented profiles, plus what makes a valid event stream: nested, sorted, in range."""
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert isinstance(doc["exporter"], str) and isinstance(doc["name"], str)
    frames = doc["shared"]["frames"]
    assert isinstance(frames, list)
    for f in frames:
        assert isinstance(f["name"], str) and f["name"]
        assert set(f) <= {"name", "file", "line", "col"}
        assert isinstance(f.get("file", ""), str)
        assert isinstance(f.get("line", 1), int) and not isinstance(f.get("line", 1), bool)
    assert isinstance(doc["profiles"], list) and doc["profiles"]
    assert 0 <= doc["activeProfileIndex"] < len(doc["profiles"])
    for p in doc["profiles"]:
        assert p["type"] == "evented" and isinstance(p["name"], str)
        assert p["unit"] in ("none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes")
        start, end = p["startValue"], p["endValue"]
        assert isinstance(start, (int, float)) and isinstance(end, (int, float)) and start <= end
        stack, last = [], start
        for e in p["events"]:
            assert set(e) == {"type", "at", "frame"} and e["type"] in ("O", "C")
            assert isinstance(e["frame"], int) and 0 <= e["frame"] < len(frames)
            assert start <= e["at"] <= end and e["at"] >= last
            last = e["at"]
            if e["type"] == "O":
                stack.append(e["frame"])
            else:
                assert stack and stack.pop() == e["frame"], "close events must be LIFO"
        assert not stack, "every open event is closed"


def _spans(profile_doc, frames):
    """frame name -> list of (open, close) times."""
    out, stack = {}, []
    for e in profile_doc["events"]:
        if e["type"] == "O":
            stack.append(e)
        else:
            o = stack.pop()
            out.setdefault(frames[o["frame"]]["name"], []).append((o["at"], e["at"]))
    return out


def test_speedscope_structure_and_layout():
    profile = make_profile()
    doc = render_speedscope(profile)
    validate_speedscope(doc)
    frames = doc["shared"]["frames"]
    assert [f["name"] for f in frames] == [LOSS, KRON, SUM]
    assert frames[0]["file"] == "model.py" and frames[0]["line"] == 12
    assert "file" not in frames[1]
    assert [p["name"] for p in doc["profiles"]] == ["forward", "reverse"]
    assert doc["exporter"].startswith("adcli ") and "model.py --n 3" in doc["name"]
    fwd = _spans(doc["profiles"][0], frames)
    assert fwd[LOSS] == [(0.0, pytest.approx(0.010))]
    assert fwd[KRON] == [(0.0, pytest.approx(0.006))]
    assert fwd[SUM] == [(pytest.approx(0.006), pytest.approx(0.007))]  # after its sibling
    rev = _spans(doc["profiles"][1], frames)
    assert rev[LOSS] == [(0.0, pytest.approx(0.004))] and rev[SUM][0][1] == pytest.approx(0.0025)
    assert doc["profiles"][0]["endValue"] == pytest.approx(0.010)
    json.dumps(doc, allow_nan=False)


def test_speedscope_children_longer_than_their_parent_still_nest():
    # Clamped self times or a hand-edited file: the parent stretches to contain its children.
    doc = make_document()
    doc["tree"]["children"][0]["forward_s"] = 0.001
    doc["tree"]["forward_s"] = 0.0
    doc = render_speedscope(Profile.from_json(doc))
    validate_speedscope(doc)
    assert doc["profiles"][0]["endValue"] == pytest.approx(0.007)


def test_speedscope_deep_and_recursive_tree():
    profile = make_document()
    node = profile["tree"]
    for _ in range(3000):  # deeper than Python's recursion limit
        child = {**node, "sig": 1, "children": []}
        node["children"] = [child]
        node = child
    doc = render_speedscope(Profile.from_json(profile))
    validate_speedscope(doc)
    assert len(doc["profiles"][0]["events"]) == 2 * 3000


# --- adcli show --------------------------------------------------------------------------------


def run(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def saved(tmp_path):
    path = str(tmp_path / "adcli-profile.json")
    store.save(make_profile(), path, samples={})
    return path


def one_line_error(res, *fragments):
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("adcli: error: "), res.stderr
    assert "Traceback" not in res.output
    for f in fragments:
        assert f in lines[0]


def test_show_table(saved):
    res = run("show", saved)
    assert res.exit_code == 0, res.output
    assert KRON in res.stdout and "15.5 ms" in res.stdout


def test_show_top_and_sort(saved):
    res = run("show", saved, "--top", "1", "--sort", "allocations")
    assert res.exit_code == 0 and LOSS in res.stdout and KRON not in res.stdout


def test_show_json(saved):
    res = run("show", saved, "--format", "json")
    assert res.exit_code == 0 and json.loads(res.stdout) == store.load(saved).to_json()


def test_show_markdown(saved):
    res = run("show", saved, "--format", "markdown", "--top", "2")
    assert res.exit_code == 0
    assert res.stdout.startswith("**Gradient time:**")
    assert sum(line.startswith("|") for line in res.stdout.splitlines()) == 4


def test_show_defaults_to_adcli_profile_json(saved, monkeypatch):
    store.save(make_profile(partial=True), saved, samples={})
    monkeypatch.chdir(os.path.dirname(saved))
    res = run("show")
    assert res.exit_code == 0 and "INCOMPLETE" in res.stdout


def test_show_missing_profile(tmp_path):
    one_line_error(run("show", str(tmp_path / "nothing.json")), "nothing.json")


def test_show_foreign_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"a": 1}')
    one_line_error(run("show", str(path)), "not an adcli profile")


def test_show_bad_options_are_usage_errors(saved):
    assert run("show", saved, "--format", "html").exit_code == 2
    assert run("show", saved, "--sort", "calls").exit_code == 2
    assert run("show", saved, "--top", "-1").exit_code == 2


def test_show_speedscope_writes_and_refuses_to_overwrite(saved, tmp_path):
    out = tmp_path / "flame.json"
    res = run("show", saved, "--speedscope", str(out))
    assert res.exit_code == 0, res.output
    assert KRON in res.stdout and "flame.json" in res.stderr
    validate_speedscope(json.loads(out.read_text()))
    assert sorted(os.listdir(tmp_path)) == ["adcli-profile.json", "adcli-profile.npz", "flame.json"]

    out.write_text("keep me")
    res = run("show", saved, "--speedscope", str(out))
    one_line_error(res, "flame.json", "--force")
    assert res.stdout == ""  # refused before printing anything
    assert out.read_text() == "keep me"

    res = run("show", saved, "--format", "json", "--speedscope", str(out), "--force")
    assert res.exit_code == 0 and json.loads(res.stdout) == store.load(saved).to_json()
    validate_speedscope(json.loads(out.read_text()))


def test_show_speedscope_never_overwrites_the_profile(saved):
    before = open(saved, "rb").read()
    one_line_error(run("show", saved, "--speedscope", saved, "--force"), "profile itself")
    assert open(saved, "rb").read() == before


def test_show_speedscope_into_a_missing_folder(saved, tmp_path):
    one_line_error(run("show", saved, "--speedscope", str(tmp_path / "no" / "out.json")), "does not exist")


@pytest.mark.parametrize("width", [80, 100])
def test_show_and_suggest_fit_narrow_terminals_without_truncating_numbers(tmp_path, monkeypatch, width):
    """At 80 and 100 columns every line fits, no number is cut (no ellipsis), the AD ratio and
    the footer stay, and the columns left out are named."""
    path = str(tmp_path / "p.json")
    store.save(make_profile(), path, samples={})
    monkeypatch.setenv("COLUMNS", str(width))
    wide = render_summary(make_profile())
    out = run("show", path).stdout
    assert all(len(line) <= width for line in out.splitlines()), out
    assert "…" not in out and "AD" in out and "ratio" in out and "signatures, by inclusive" in out
    ratios = [c for row in wide.splitlines() for c in row.split("│") if c.strip().endswith("×")]
    assert ratios and all(r.strip() in out for r in ratios)  # every AD ratio of the wide table, whole
    if width == 80:
        assert "columns left out to fit 80 columns: prims" in " ".join(out.split())
    monkeypatch.delenv("COLUMNS")
    assert "columns left out" not in render_summary(make_profile()) and wide


def test_times_are_printed_in_the_unit_that_suits_each():
    # 1.03 µs printed "0.001" and 138 s printed "138376.560" when every time was in milliseconds
    from adcli.units import duration

    assert [duration(x) for x in (1.03e-6, 0.0452, 138.37656)] == ["1.03 µs", "45.2 ms", "138 s"]
    from adcli.render import profile as rp

    assert all("(ms)" not in c for c in rp.COLUMNS + rp._HEADS)
