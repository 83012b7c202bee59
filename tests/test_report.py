"""adcli report: one self-contained HTML page (no script, no network) with the status, the
signatures, the AD-ratio chart, flame graphs and the advice linked to its signatures."""

import json
import os
import re
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from adcli.cli import cli

SCRIPTS = os.path.join(os.path.dirname(__file__), "support", "scripts")
VOID = {"meta", "br", "line", "img", "input", "link"}


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.ids, self.hrefs, self.tags = [], [], set(), [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.add(a["id"])
        if "href" in a:
            self.hrefs.append(a["href"])
        if "src" in a:
            self.errors.append(f"external resource {a['src']}")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        else:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")


def parse(path):
    page = _Page()
    page.feed(open(path, encoding="utf-8").read())
    assert not page.stack and not page.errors, (page.stack, page.errors)
    return page


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def test_report_of_a_replayed_profile(tmp_path):
    prof, out = str(tmp_path / "p.json"), str(tmp_path / "report.html")
    loop = os.path.join(os.path.dirname(SCRIPTS), "..", "..", "profiles", "sum_loop_1000.py")  # advice: hand-write f
    assert invoke("profile", "-o", prof, loop).exit_code == 0
    res = invoke("report", prof, "-o", out)
    assert res.exit_code == 0, res.output
    page = parse(out)
    assert "script" not in page.tags  # no JavaScript: a page anyone can open offline
    assert {"p0-status", "p0-signatures", "p0-ratios", "p0-forward", "p0-reverse", "advice"} <= page.ids
    internal = [h for h in page.hrefs if h.startswith("#")]
    assert internal and all(h[1:] in page.ids for h in internal)  # every link lands on its signature
    assert not [h for h in page.hrefs if not h.startswith("#")]
    text = open(out, encoding="utf-8").read()
    assert "complete: the run ended normally" in text and "hand-write" in text
    assert re.search(r'<li id="advice-1"><b>hand-write</b> <a href="#p0-sig\d+">', text)
    again = invoke("report", prof, "-o", out)
    assert again.exit_code == 2 and "pass --force" in again.output


def test_report_escapes_the_profile_and_says_why_there_is_no_advice(tmp_path):
    prof, out = str(tmp_path / "p.json"), str(tmp_path / "report.html")
    assert invoke("profile", "-o", prof, "--no-replay", os.path.join(SCRIPTS, "known_calls.py")).exit_code == 0
    doc = json.load(open(prof))
    doc["command"] = ["<script>alert(1)</script>", "--x=\"'&"]
    json.dump(doc, open(prof, "w"))
    assert invoke("report", prof, "-o", out).exit_code == 0
    page = parse(out)
    text = open(out, encoding="utf-8").read()
    assert "script" not in page.tags and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "INCOMPLETE: no replays" in text and "no call was replayed" in text


def test_charts_have_a_legend_of_their_colours_and_flame_graphs_a_time_axis(tmp_path):
    from adcli.render.report import _COLOURS, time_ticks

    prof, out = str(tmp_path / "p.json"), str(tmp_path / "report.html")
    assert invoke("profile", "-o", prof, os.path.join(os.path.dirname(SCRIPTS), "..", "..", "profiles",
                                                      "gp_lml.py")).exit_code == 0
    assert invoke("report", prof, "-o", out).exit_code == 0
    text = open(out, encoding="utf-8").read()
    assert {"p0-ratios-legend", "p0-forward-legend", "p0-reverse-legend"} <= parse(out).ids
    for chart in ("ratios", "forward", "reverse"):
        svg = text[text.index(f'id="p0-{chart}"'):]
        svg, legend = svg[:svg.index("</svg>")], svg[svg.index(f'id="p0-{chart}-legend"'):].split("</p>")[0]
        fills = set(re.findall(r'<rect[^>]* fill="(#[0-9a-f]{6})"', svg))
        swatches = set(re.findall(r'class="swatch" style="background:(#[0-9a-f]{6})"', legend))
        assert fills and fills == swatches, (chart, fills, swatches)  # every colour shown is explained, no other
        assert {"derived", "native"} <= {k for k, c in _COLOURS.items() if f"a {k} rule" in legend}
    forward = text[text.index('id="p0-forward"'):]
    axis = forward[forward.index('class="time-axis"'):forward.index("</svg>")]
    labels = re.findall(r"<text[^>]*>([^<]+)</text>", axis)
    assert labels[0] == "0" and len(labels) >= 3 and all(re.fullmatch(r"\d+(\.\d+)? (ms|µs|s)", x) for x in labels[1:])
    assert re.search(r"<td>\d+(\.\d+)?&nbsp;(ms|µs|s)</td>", text)
    assert "td:not(.l){white-space:nowrap}" in text  # a number and its unit never part

    assert time_ticks(0.0083) == pytest.approx([0.0, 0.002, 0.004, 0.006, 0.008])  # steps of 1, 2 or 5
    assert time_ticks(0.0079) == pytest.approx([0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007])
    assert time_ticks(0.84) == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])
    assert time_ticks(138.4) == pytest.approx([0, 20, 40, 60, 80, 100, 120])
