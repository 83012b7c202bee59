"""Issue "A profile is data", items 1-5: nothing from a profile is executed, imported, or
written into code or a terminal unescaped. Profiles here are hand-made, as an attacker would."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from adcli.cli import cli
from adcli.profiler.model import Profile, ProfileError
from adcli.render import render
from adcli.render.profile import render_markdown, render_summary
from tests.support.profiles import document, stats, trial, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(autouse=True)
def plain_output(monkeypatch):
    monkeypatch.setattr(os, "isatty", lambda fd: False)


def no_code_but_the_generated(path):
    """The exported module parses, and no statement or call of it mentions the payload."""
    source = open(path, encoding="utf-8").read()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            assert node.id not in ("open", "os", "system", "PWNED"), ast.dump(node)
    for line in source.splitlines():
        if "PWNED" in line:
            assert line.lstrip().startswith("#") or "'" in line, line  # a comment, or inside a repr'd string
    return source


# --- 1. signatures and reasons in the exported module's comments ------------------------------


@pytest.mark.parametrize("payload", ["\nimport os; PWNED = 1", "\rimport os; PWNED = 1", "\u2028PWNED = 1",
                                     "\x0bPWNED = 1", "\x85PWNED = 1"])
def test_a_signature_with_a_line_break_is_refused_on_load(tmp_path, payload):
    path = write(tmp_path / "p.json", document([stats(1, f"numpy.kron(f64[2d], f64[2d]){payload}")]))
    out = tmp_path / "rules.py"
    res = invoke("export", path, "-o", str(out))
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1 and "signature" in res.output
    assert not out.exists()


@pytest.mark.parametrize("payload", ["\rimport os; os.system('PWNED')", "\nPWNED = open('x', 'w')",
                                     "\u2028PWNED = 1", "\x1b]8;;x\x07PWNED"])
def test_profile_text_in_the_reasons_reaches_the_module_only_as_comments(tmp_path, payload):
    imp = trial(f"autograd numpy.kron{payload}", rule_s=0.004)
    path = write(tmp_path / "p.json", document([stats(1, "numpy.kron(f64[2d], f64[2d])", imports=[imp])]))
    out = str(tmp_path / "rules.py")
    res = invoke("export", path, "-o", out)
    assert res.exit_code == 0, res.output
    source = no_code_but_the_generated(out)
    assert "\r" not in source and "\x1b" not in source and "\u2028" not in source


# --- 2. check never runs the script a profile names ------------------------------------------


RULES = '''import numpy as np
import adcli.rules
from adcli.testing import check_rule


@adcli.rules.rule(np.cumsum, "f64[1d]", replace=True)
def cumsum_rule(x):
    return np.cumsum(x), lambda g: (np.cumsum(g[::-1])[::-1],)


def test_cumsum():
    check_rule(np.cumsum, np.linspace(0.0, 1.0, 5), timing=False)
'''


def test_check_never_runs_the_script_a_profile_names(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    path = write(tmp_path / "p.json", document([stats(1, "numpy.sum(f64[1d])")], command=["evil.py"]))
    (tmp_path / "rules.py").write_text(RULES)
    monkeypatch.chdir(tmp_path)
    try:
        res = invoke("check", "rules.py", "--profile", path)
    finally:
        from adcli.rules import unregister

        unregister(__import__("numpy").cumsum)
    assert res.exit_code == 0, res.output
    assert not marker.exists()


# --- 3. export imports nothing to name a target ----------------------------------------------


def test_export_imports_nothing_a_profile_names(tmp_path):
    marker = tmp_path / "imported"
    pkg = tmp_path / "evilpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (pkg / "sub.py").write_text("")
    path = write(tmp_path / "p.json", document([stats(1, "evilpkg.sub.f(f64[1d])", calls=1, time=1.0, derived=1.0,
                                                       primal=0.01)]))
    res = subprocess.run([sys.executable, "-m", "adcli", "export", path, "-o", "rules.py"], cwd=tmp_path,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert res.returncode == 0, res.stderr
    assert not marker.exists()
    assert "@adcli.rules.rule('evilpkg.sub:f', 'f64[1d]')" in (tmp_path / "rules.py").read_text()


# --- 4. the profile's path in the generated module ---------------------------------------------


def test_the_profile_path_reaches_the_module_only_through_repr(tmp_path):
    name = 'a"""\\b\'c.json'
    path = write(tmp_path / name, document([stats(1, "numpy.kron(f64[2d], f64[2d])",
                                                   imports=[trial("autograd numpy.kron", rule_s=0.004)])]))
    out = str(tmp_path / "rules.py")
    res = invoke("export", path, "-o", out)
    assert res.exit_code == 0, res.output
    tree = ast.parse(open(out, encoding="utf-8").read())
    [assign] = [n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "PROFILE"]
    assert ast.literal_eval(assign.value) == path
    assert name not in ast.get_docstring(tree)


# --- 5. terminal and markdown output -----------------------------------------------------------


def profile_with(signature, rule="autograd numpy.kron"):
    return Profile.from_json(document([stats(1, signature, imports=[trial(rule, rule_s=0.004)])]))


def test_markup_like_dict_keys_are_shown_as_they_are():
    for key in ("'x[/]'", "'W[in]'", "'[link=http://evil]x'", "'[bold]b'"):
        sig = f"numpy.kron(dict{{{key}: f64[2d]}}, f64[2d])"
        out = render_summary(profile_with(sig))
        assert key.strip("'") in out, out


def test_escape_sequences_never_reach_the_terminal():
    p = profile_with("numpy.kron(f64[2d], f64[2d])", rule="autograd \x1b]8;;http://evil\x07numpy\x1b[2J.kron\u202e")
    from adcli.advisor import suggest
    from adcli.app.advice import Advice

    suggestions, summary = suggest([p])
    for fmt in ("table", "markdown", "json"):
        out = render(Advice(suggestions, summary, None, True), fmt)
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, fmt
        if fmt != "json":
            assert "\\x1b" in out


def test_markdown_escapes_backticks_pipes_and_newlines():
    p = profile_with("numpy.kron(dict{'a`b|c': f64[2d]}, f64[2d])", rule="autograd `x`\n| y")
    md = render_markdown(p)
    [row] = [line for line in md.splitlines() if "a`b" in line]
    assert "`` numpy.kron(dict{'a`b\\|c'" in row and row.count("|") - row.count("\\|") == 11
    from adcli.advisor import suggest
    from adcli.app.advice import Advice

    text = render(Advice(*suggest([p]), None, True), "markdown")
    assert "\n| y" not in text and "\\`x\\`" in text


def test_the_error_line_escapes_what_it_quotes(tmp_path):
    res = invoke("show", str(tmp_path / "no\x1b[31mpe.json"))
    assert res.exit_code == 2 and "\x1b" not in res.output and "\\x1b" in res.output


def test_a_profile_that_lists_bad_text_in_any_free_field_still_renders_escaped(tmp_path):
    doc = document([stats(1, "numpy.sum(f64[1d])", location="\x1b[31mx.py:1")], command=["\x1b]0;t\x07"])
    path = write(tmp_path / "p.json", doc)
    for args in (["show", path], ["show", path, "--format", "markdown"], ["show", path, "--format", "json"]):
        res = invoke(*args)
        assert res.exit_code == 0 and "\x1b" not in res.output and "\x07" not in res.output
    assert json.loads(invoke("show", path, "--format", "json").output)["command"] == ["\x1b]0;t\x07"]


def test_signatures_must_parse(tmp_path):
    for bad in ("kron(f64[2d])", "numpy.kron(f64[2d]", "numpy.kron(x[/])", "numpy.kron(\ud800)", "numpy.kron(W[in])"):
        with pytest.raises(ProfileError) as info:
            Profile.from_json(document([stats(1, bad)]), "p.json")
        assert "\n" not in str(info.value) and "signature" in str(info.value)
