"""`adcli rules list` / `adcli rules show`, through click's runner and the real console script."""

import json
import os
import shutil
import subprocess
import sys

from click.testing import CliRunner

from adcli.cli import cli


def run(*args):
    return CliRunner().invoke(cli, list(args))


def test_rules_list_json_counts_every_source():
    res = run("rules", "list", "--format", "json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    sources = {r["source"] for r in rows}
    assert {"native", "derived", "autograd"} <= sources
    names = {r["name"] for r in rows if r["source"] == "native"}
    assert {"numpy.sin", "numpy.linalg.cholesky", "numpy.sum", "numpy.matmul"} <= names
    assert "numpy.kron" in {r["name"] for r in rows if r["source"] == "derived"}
    assert "numpy.kron" in {r["name"] for r in rows if r["source"] == "autograd"}


def test_rules_list_source_filter():
    rows = json.loads(run("rules", "list", "--source", "autograd", "--format", "json").output)
    assert rows and all(r["source"] == "autograd" for r in rows)
    rows = json.loads(run("rules", "list", "--source", "native", "--format", "json").output)
    assert rows and all(r["source"] != "autograd" for r in rows)


def test_rules_list_table_has_a_header():
    res = run("rules", "list", "--source", "native")
    assert res.exit_code == 0 and "callable" in res.output and "numpy.sin" in res.output


def test_rules_show_one_callable():
    res = run("rules", "show", "np.kron", "--format", "json")
    info = json.loads(res.output)
    assert info["name"] == "numpy.kron"
    assert info["native"] is False and info["derivation"]
    assert info["autograd"]["importable"] is True and info["autograd"]["argnums"] == [0, 1]


def test_rules_show_unknown_name_lists_close_matches_and_exits_2():
    res = run("rules", "show", "kronn")
    assert res.exit_code == 2
    assert "numpy.kron" in res.output and "Traceback" not in res.output


def test_bad_source_is_a_usage_error():
    res = run("rules", "list", "--source", "everything")
    assert res.exit_code == 2 and "everything" in res.output


def test_console_script_and_module_entry_points():
    script = shutil.which("adcli", path=os.path.dirname(sys.executable)) or shutil.which("adcli")
    assert script is not None, "the adcli console script is not installed (pip install -e .)"
    env = {**os.environ, "NO_COLOR": "1"}
    for cmd in ([script], [sys.executable, "-m", "adcli"]):
        out = subprocess.run(cmd + ["--version"], capture_output=True, text=True, env=env)
        assert out.returncode == 0 and "adcli" in out.stdout
        out = subprocess.run(cmd + ["rules", "show", "numpy.sin"], capture_output=True, text=True, env=env)
        assert out.returncode == 0 and "native rule:   yes" in out.stdout


def test_scipy_rules_are_listed_and_shown_by_their_real_names():
    rows = json.loads(run("rules", "list", "--source", "native", "--format", "json").output)
    names = {r["name"] for r in rows}
    assert {"scipy.special.logsumexp", "scipy.stats.norm.logpdf", "scipy.stats.multivariate_normal.logpdf",
            "scipy.integrate.odeint", "scipy.signal.convolve", "scipy.special.gammaln", "scipy.special.betainc"} <= names
    info = json.loads(run("rules", "show", "scipy.stats.t.logpdf", "--format", "json").output)
    assert info["name"] == "scipy.stats.t.logpdf" and info["native"] is True
    assert info["autograd"]["importable"] is True


def test_help_texts_are_whole_and_say_the_sampling_budget_the_code_uses():
    from adcli.profiler.sampling import OVERHEAD_BUDGET

    for group in ([], ["rules"]):
        res = CliRunner().invoke(cli, [*group, "--help"], terminal_width=80)
        commands = res.output.split("Commands:")[1]
        assert res.exit_code == 0 and "..." not in commands, commands
        assert all(line.rstrip().endswith(".") for line in commands.strip().splitlines()), commands
    res = CliRunner().invoke(cli, ["profile", "--help"], terminal_width=200)
    assert f"within {OVERHEAD_BUDGET:.0%} of the gradient time" in " ".join(res.output.split())


def test_ctrl_c_exits_130_with_one_line(monkeypatch):
    from adcli import app

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(app, "rules_list", interrupted)
    res = CliRunner().invoke(cli, ["rules", "list"])
    assert res.exit_code == 130 and "adcli: interrupted" in res.output and "Aborted" not in res.output
