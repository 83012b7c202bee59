"""``adcli check``: OK only for a rule that served every checked call; FAIL says why a rule did not
serve; the script's and the rules file's folders are importable; the JSON output; the exit statuses."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

from adcli.cli import cli
from adcli.rules import unregister

HELPER = '''
import numpy as np


def logsumexp(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))
'''

PROGRAM = '''
import numpy as np

import adcli
from {module} import logsumexp


def loss(x):
    return np.sum(logsumexp(x, axis=1) ** 2)


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal((5, 4))
    for _ in range(2):
        adcli.grad(loss)(x)
'''

# the pullback of logsumexp, times ``factor`` (2: a wrong rule)
RULES = '''
import numpy as np

import adcli.rules


@adcli.rules.rule({target!r}, {types})
def logsumexp_rule(x, axis=-1):
    ans = adcli.rules.original("{module}:logsumexp")(x, axis=axis)

    def pullback(g):
        return ({factor} * np.expand_dims(g, axis) * np.exp(x - np.expand_dims(ans, axis)),)

    return ans, pullback
'''


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def program(tmp_path, monkeypatch, request):
    """A program importing a helper module next to it (a name of its own per test: modules stay
    in sys.modules), profiled; returns (folder, module name, profile path, files). sys.path,
    the helper module and the rules are restored afterwards."""
    module = f"port_helpers_{request.node.name.split('[')[0][-12:]}_{abs(hash(request.node.name)) % 10**6}"
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / f"{module}.py").write_text(HELPER)
    (tmp_path / "prog.py").write_text(PROGRAM.format(module=module))
    monkeypatch.chdir(tmp_path)
    res = invoke("profile", "-o", "p.json", "prog.py")
    assert res.exit_code == 0, res.output
    yield tmp_path, module
    unregister(f"{module}:logsumexp")
    sys.modules.pop(module, None)


def write_rules(folder, module, target=None, types='"f64[2d]", "axis=int"', factor=1.0, extra=""):
    path = folder / "rules.py"
    path.write_text(RULES.format(target=target or f"{module}:logsumexp", types=types, module=module, factor=factor)
                    + textwrap.dedent(extra))
    return path


def test_a_doubled_pullback_is_wrong_not_ok_and_the_script_folder_is_importable(program):
    """The sample's keyword arguments reach the check: the rule under test serves it and its
    doubled pullback is found (before, the call without axis= was served by the derived rule
    and said OK). No PYTHONPATH: the script's folder is on sys.path, as for `python prog.py`."""
    folder, module = program
    rules = write_rules(folder, module, factor=2.0)
    res = invoke("check", rules, "--profile", "p.json", "--script", "prog.py", "--module", f"{module}.py")
    assert res.exit_code == 1, res.output
    assert res.output.startswith("WRONG") and "served by derived rule" not in res.output
    assert "argument 0 (x)" in res.output and "worst component [" in res.output
    assert "(relative error 1)" in res.output  # twice the right value: off by 100%


def test_a_right_rule_is_ok_because_it_served_the_sample(program):
    folder, module = program
    rules = write_rules(folder, module)
    res = invoke("check", rules, "--profile", "p.json", "--script", "prog.py", "--module", f"{module}.py",
                 "--format", "json")
    assert res.exit_code == 0, res.output
    [result] = json.loads(res.stdout)["results"]
    assert result["status"] == "ok" and result["served_by"] == f"<hand-written rule {module}.logsumexp(f64[2d], axis=int)>"
    assert "finite differences" in result["checks"] and "agrees with derived rule" in result["checks"]
    assert result["gradient_s"] > 0 and result["replaced_s"] > 0 and result["peak_bytes"] > 0


@pytest.mark.parametrize("case, want", [
    ("signature", "signature mismatch: the program calls {module}.logsumexp(f64[2d], axis=int)"),
    ("misspelt", "target not found: the module {module}x is not imported"),
    ("missing function", "target not found: {module} ({folder}/{module}.py) does not define logsumexpx"),
])
def test_a_rule_that_does_not_serve_fails_saying_why(program, case, want):
    folder, module = program
    target = {"misspelt": f"{module}x:logsumexp", "missing function": f"{module}:logsumexpx"}.get(case)
    rules = write_rules(folder, module, target=target, types='"f64[2d]"' if case == "signature" else '"f64[2d]", "axis=int"')
    try:
        res = invoke("check", rules, "--profile", "p.json", "--script", "prog.py", "--module", f"{module}.py")
    finally:
        for t in (target,):
            if t:
                unregister(t)
    assert res.exit_code == 1, res.output
    assert res.output.startswith("FAIL") and want.format(module=module, folder=folder) in res.output, res.output


def test_a_module_imported_under_another_name_fails_naming_it(tmp_path, monkeypatch):
    """The program imports the helper as pkg.<name>; a rule for <name>:logsumexp would never serve it."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkgalias").mkdir()
    (tmp_path / "pkgalias" / "__init__.py").write_text("")
    (tmp_path / "pkgalias" / "helpers_alias.py").write_text(HELPER)
    (tmp_path / "prog.py").write_text(PROGRAM.format(module="pkgalias.helpers_alias"))
    assert invoke("profile", "-o", "p.json", "prog.py").exit_code == 0
    rules = write_rules(tmp_path, "helpers_alias")
    try:
        res = invoke("check", rules, "--profile", "p.json", "--script", "prog.py")
    finally:
        unregister("helpers_alias:logsumexp")
        for m in ("pkgalias", "pkgalias.helpers_alias"):
            sys.modules.pop(m, None)
    assert res.exit_code == 1 and res.output.startswith("FAIL"), res.output
    assert "under another name" in res.output and "pkgalias.helpers_alias:logsumexp" in res.output


def test_a_test_function_that_calls_the_function_without_the_rules_signature_fails(program):
    """Without samples the module's own test runs; a call the rule does not match (axis left
    out) is served by the derived rule, and that is a FAIL naming the mismatch, not an OK."""
    folder, module = program
    rules = write_rules(folder, module, extra=f'''

        def test_logsumexp():
            from adcli.testing import check_rule
            check_rule(adcli.rules.dispatch(adcli.rules.original("{module}:logsumexp")), np.ones((3, 2)))
        ''')
    res = invoke("check", rules, "--script", "prog.py", "--module", f"{module}.py")
    assert res.exit_code == 1 and res.output.startswith("FAIL"), res.output
    assert f"the call is {module}.logsumexp(f64[2d])" in res.output and "signature mismatch" in res.output


def test_the_rules_files_folder_is_importable(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "helper_for_rules.py").write_text("import numpy as np\n\n\ndef double(x):\n    return 2.0 * x\n")
    (tmp_path / "rules.py").write_text(textwrap.dedent('''
        import numpy as np
        from helper_for_rules import double

        import adcli.rules


        @adcli.rules.rule(np.cumsum, "f64[1d]")
        def cumsum_rule(x):
            return np.cumsum(x), lambda g: (double(np.cumsum(g[::-1])[::-1]) / 2.0,)


        def test_cumsum():
            from adcli.testing import check_rule
            check_rule(np.cumsum, np.linspace(0.1, 1.0, 5))
        '''))
    try:
        res = invoke("check", tmp_path / "rules.py")
    finally:
        unregister(np.cumsum)
        sys.modules.pop("helper_for_rules", None)
    assert res.exit_code == 0 and res.output.startswith("OK"), res.output


def test_a_rules_file_declaring_no_rule_exits_1_with_valid_json(tmp_path):
    empty = tmp_path / "rules.py"
    empty.write_text("import numpy as np\n")
    res = CliRunner().invoke(cli, ["check", str(empty), "--format", "json"])
    assert res.exit_code == 1 and "declares no rule" in res.stderr
    assert json.loads(res.stdout) == {"path": str(empty), "rules": 0, "ok": 0, "results": [], "evidence": []}
    res = invoke("check", empty)
    assert res.exit_code == 1 and "declares no rule" in res.output


def test_check_json_carries_the_sizes_table(tmp_path):
    scripts = os.path.join(os.path.dirname(__file__), "support", "scripts")
    prof = str(tmp_path / "p.json")
    assert invoke("profile", "-o", prof, os.path.join(scripts, "uses_cumsum.py")).exit_code == 0
    try:
        res = CliRunner().invoke(cli, ["check", os.path.join(scripts, "cumsum_rules.py"), "--profile",
                                                       prof, "--sizes", "1,3", "--format", "json"])
    finally:
        unregister(np.cumsum)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["rules"] == doc["ok"] == 1 and doc["results"][0]["status"] == "ok"
    [ev] = doc["evidence"]
    assert ev["check"] == "passed" and ev["without"] == "native" and [r["size"] for r in ev["rows"]] == [1, 3]
    for row in ev["rows"]:
        assert row["shapes"] in ("(50,)", "(150,)") and row["rule_s"] > 0 and row["without_s"] > 0
        assert row["speedup"] == pytest.approx(row["without_s"] / row["rule_s"])


def test_a_helper_module_not_passed_is_refused_naming_its_file(program):
    """The trust boundary holds (status 2, nothing called), and the refusal says which file to pass."""
    folder, module = program
    rules = write_rules(folder, module)
    res = invoke("check", rules, "--profile", "p.json", "--script", "prog.py")
    assert res.exit_code == 2 and "refusing to check" in res.output
    assert f"it is defined in {folder}/{module}.py: pass --module FILE" in res.output


BROKEN = {  # a rules file that raises while it loads -> what its one line says
    "import adcli.rules\n\nX = np.zeros(3)\n": ":3: the rules file raised NameError: name 'np' is not defined",
    "import adcli.rules\n\n\ndef helper():\n    raise ValueError('no data\\nhere')\n\n\nhelper()\n":
        ":5: the rules file raised ValueError: no data\\nhere",
    "import no_such_module_of_rules_xyz\n": ":1: the rules file raised ModuleNotFoundError: No module named",
    "import sys\n\nsys.exit(3)\n": ":3: the rules file called sys.exit(3) while it loaded",
    "import numpy as np\n\nimport adcli.rules\n\nadcli.rules.rule(np.sin, 'f99[1d]')(np.sin)\n": ":5: unknown dtype code 'f99'",
}


@pytest.mark.parametrize("source", list(BROKEN))
@pytest.mark.parametrize("command", ["check", "profile"])
def test_a_rules_file_that_raises_while_it_loads_is_one_line_naming_its_line(tmp_path, source, command):
    """adcli check RULES.py and adcli profile --rules RULES.py: one line naming the file, its line
    and the exception, exit status 2, no traceback (and the profiled program does not run)."""
    rules = tmp_path / "rules.py"
    rules.write_text(source)
    marker = tmp_path / "ran"
    (tmp_path / "prog.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    args = ["check", rules] if command == "check" else ["profile", "--rules", rules, "-o", tmp_path / "p.json",
                                                           tmp_path / "prog.py"]
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1, res.output
    assert res.output.startswith(f"adcli: error: {rules}{BROKEN[source]}"), res.output
    assert not marker.exists() and not (tmp_path / "p.json").exists()


def test_the_console_script_reports_a_rules_file_that_raises_in_one_line(tmp_path):
    rules = tmp_path / "rules.py"
    rules.write_text("import adcli.rules\n\n\n@adcli.rules.rule(np.cumsum, 'f64[1d]')\ndef r(x):\n    pass\n")
    res = subprocess.run([sys.executable, "-m", "adcli", "check", str(rules)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert res.returncode == 2 and res.stdout == "", res.stdout
    assert res.stderr == f"adcli: error: {rules}:4: the rules file raised NameError: name 'np' is not defined\n"


def test_a_rule_for_the_scripts_function_checked_without_the_script_says_to_pass_it(program):
    # __main__ at check time is adcli's own entry point (the console script), not the profiled
    # program: the failure says to pass --script, never "__main__ (.../bin/adcli) does not define"
    folder, module = program
    target = "__main__:a_function_only_the_script_defines"
    rules = write_rules(folder, module, target=target)
    try:
        res = invoke("check", rules, "--profile", "p.json", "--module", f"{module}.py")
    finally:
        unregister(target)
    assert res.exit_code == 1 and res.output.startswith("FAIL"), res.output
    assert "pass --script SCRIPT" in res.output and "does not define" not in res.output, res.output
