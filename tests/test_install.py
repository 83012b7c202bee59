"""Rules in a plain program (issue "From advice to a checked rule", item 5): ``adcli.rules.install``
makes a rules file serve functions, closures and methods in ``python prog.py`` with nothing
decorated, proven by a deliberately wrong rule changing the gradient; ``adcli.profile()`` records
a notebook's own functions; ``import adcli`` exposes ``adcli.rules``."""

import ast
import json
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import adcli
from adcli.rules import dispatch, install, uninstall
from tests.support.fresh import fresh_python

HELPER = '''
import numpy as np


def make_shifted(c):
    def shifted(theta):
        return np.sum((theta - c) ** 2)

    return shifted


def cube(theta):
    return np.sum(theta ** 3)
'''

# install() at the top (the script runs again with dispatch points), or inside main() (what is
# defined is served in place); the helper module is imported before install() either way.
PROGRAM = '''
import json
import sys

import numpy as np

import adcli
from helper_mod import cube, make_shifted

{top}


class Model:
    def __init__(self, scale):
        self.scale = scale

    def energy(self, theta, x):
        return self.scale * np.sum(np.sin(x @ theta) ** 2)


def make(data):
    def objective(theta):
        return np.sum(np.tanh(data @ theta)) + Model(2.0).energy(theta, data) + make_shifted(0.5)(theta) + cube(theta)

    return objective


def main():
    {inside}
    data = np.random.default_rng(0).standard_normal((6, 3))
    g = adcli.grad(make(data))(np.linspace(0.1, 0.3, 3))
    print(json.dumps(g.tolist()))


if __name__ == "__main__":
    main()
'''

# Each rule's pullback is zero: the gradient loses that term when, and only when, the rule serves.
ZERO_RULES = {
    "closure": '''
@adcli.rules.rule("__main__:make.<locals>.objective", "f64[1d]")
def objective_rule(theta):
    return adcli.rules.original("__main__:make.<locals>.objective")(theta), lambda g: (np.zeros_like(theta),)
''',
    "method": '''
@adcli.rules.rule("__main__:Model.energy", "obj(__main__.Model)", "f64[1d]", "f64[2d]")
def energy_rule(self, theta, x):
    return self.scale * np.sum(np.sin(x @ theta) ** 2), lambda g: (None, np.zeros_like(theta), np.zeros_like(x))
''',
    "helper closure": '''
@adcli.rules.rule("helper_mod:make_shifted.<locals>.shifted", "f64[1d]")
def shifted_rule(theta):
    return adcli.rules.original("helper_mod:make_shifted.<locals>.shifted")(theta), lambda g: (np.zeros_like(theta),)
''',
    "helper function": '''
@adcli.rules.rule("helper_mod:cube", "f64[1d]")
def cube_rule(theta):
    return np.sum(theta ** 3), lambda g: (np.zeros_like(theta),)
''',
}


def gradient_terms(theta=np.linspace(0.1, 0.3, 3)):
    """The gradient's terms, as the program computes them: {rule case: its term}."""
    data = np.random.default_rng(0).standard_normal((6, 3))
    return {"closure": None, "method": 2.0 * data.T @ np.sin(2.0 * (data @ theta)),
            "helper closure": 2.0 * (theta - 0.5), "helper function": 3.0 * theta ** 2}


def run(folder, where, rules=None):
    top = "adcli.rules.install(sys.argv[1]) if len(sys.argv) > 1 else None" if where == "top" else ""
    inside = "adcli.rules.install(sys.argv[1]) if len(sys.argv) > 1 else None" if where == "inside" else "pass"
    (folder / "helper_mod.py").write_text(HELPER)
    (folder / "prog.py").write_text(PROGRAM.format(top=top, inside=inside))
    argv = []
    if rules is not None:
        (folder / "rules.py").write_text("import numpy as np\n\nimport adcli.rules\n" + rules)
        argv = ["rules.py"]
    out = subprocess.run([sys.executable, "prog.py", *argv], cwd=folder, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return np.array(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize("where", ["top", "inside"])
@pytest.mark.parametrize("case", list(ZERO_RULES))
def test_a_wrong_rule_installed_in_a_plain_program_changes_its_gradient(tmp_path, case, where):
    """`python prog.py rules.py`: each zero rule removes exactly its term of the gradient (the
    closure's: all of it), so it served; without install the program's gradient is the plain one."""
    plain = run(tmp_path, where)
    served = run(tmp_path, where, ZERO_RULES[case])
    term = gradient_terms()[case]
    expected = np.zeros(3) if term is None else plain - term
    assert not np.allclose(served, plain)
    np.testing.assert_allclose(served, expected, rtol=1e-10, atol=1e-12)


def test_installed_at_the_top_the_script_runs_once_more_and_ends_with_its_exit_status(tmp_path):
    (tmp_path / "rules.py").write_text("import adcli.rules\n")
    (tmp_path / "prog.py").write_text(textwrap.dedent('''
        print("before")
        import sys
        import adcli
        adcli.rules.install("rules.py")
        print("after", "__adcli_rules__" in globals())
        sys.exit(3)
        '''))
    out = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 3, out.stderr
    assert out.stdout.split("\n")[:3] == ["before", "before", "after True"]


def test_import_adcli_exposes_rules_without_loading_it():
    code = "import sys, adcli; print('adcli.rules' in sys.modules); print(callable(adcli.rules.install))"
    assert fresh_python(code).split() == ["False", "True"]


MODULE = '''
import numpy as np


class Model:
    def energy(self, theta):
        return np.sum(theta ** 2)


def make(c):
    def loss(theta):
        return c * np.sum(theta ** 2)

    return loss


kept = make(2.0)
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module of the user's, imported from the current folder (what install() serves in place);
    ``__main__`` a namespace without a file, as a notebook's (the user's folder: the current one)."""
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "inplace_mod.py").write_text(MODULE)
    (tmp_path / "rules.py").write_text(textwrap.dedent('''
        import numpy as np
        import adcli.rules

        for target, types in [("inplace_mod:make.<locals>.loss", ("f64[1d]",)),
                              ("inplace_mod:Model.energy", ("obj(inplace_mod.Model)", "f64[1d]"))]:
            adcli.rules.register(target, types, lambda *a: (0.0, lambda g: (None,) * (len(a) - 1) + (np.zeros_like(a[-1]),)))
        '''))
    import inplace_mod

    yield inplace_mod
    uninstall()
    sys.modules.pop("inplace_mod", None)


def test_install_serves_in_place_what_is_defined_and_uninstall_puts_it_back(user_module):
    """Called from inside a function (not a script's top level): the module's closure kept by
    name, its closures made later, its methods are served; uninstall() restores them all."""
    m, x = user_module, np.ones(3)
    originals = (m.make, m.kept, m.Model.energy, m.make.__code__)
    install("rules.py")
    assert adcli.grad(m.kept)(x).tolist() == [0.0] * 3  # the closure the module keeps
    assert adcli.grad(m.make(3.0))(x).tolist() == [0.0] * 3  # a closure made after install()
    assert adcli.grad(lambda t: m.Model().energy(t))(x).tolist() == [0.0] * 3
    uninstall()
    assert (m.make, m.kept, m.Model.energy, m.make.__code__) == originals
    assert adcli.grad(m.make(3.0))(x).tolist() == [6.0] * 3 and adcli.grad(m.kept)(x).tolist() == [4.0] * 3


def test_in_ipython_the_cells_run_later_define_dispatch_points(user_module, monkeypatch):
    shell = types.SimpleNamespace(ast_transformers=[], user_ns={})
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    install("rules.py")
    [transformer] = shell.ast_transformers
    cell = transformer.visit(ast.parse("def f(x):\n    def g(y):\n        return y\n    return g(x)\n"))
    assert ast.unparse(cell).count("@__adcli_rules__.dispatch") == 2
    assert shell.user_ns["__adcli_rules__"] is adcli.rules
    uninstall()
    assert shell.ast_transformers == []


NOTEBOOK = '''
import numpy as np
import adcli


class Model:
    def __init__(self, scale):
        self.scale = scale

    def energy(self, theta):
        return self.scale * np.sum(np.sin(theta) ** 2)


def make(c):
    def loss(theta):
        return c * np.sum(np.cos(theta)) + Model(2.0).energy(theta)

    return loss


def helper(theta):
    return np.sum(theta ** 2)


kept = make(0.5)
with adcli.profile(replays_total=5) as run:
    for _ in range(5):
        adcli.grad(kept)(np.ones(4))
        adcli.grad(lambda t: make(1.0)(t) + helper(t))(np.ones(4))
names = sorted({s.signature.qualname for s in run.profile.signatures if s.kind == "user"})
print(names)
from adcli.app import Advice
print(isinstance(run.suggest(), Advice))
print(getattr(kept, "__adcli_original__", None) is None, getattr(Model.energy, "__adcli_original__", None) is None)
'''


def test_the_notebook_api_records_undecorated_functions_closures_and_methods(tmp_path):
    out = subprocess.run([sys.executable, "-c", NOTEBOOK], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    names, advice, restored = out.stdout.splitlines()
    assert names == str(["Model.__init__", "Model.energy", "helper", "make", "make.<locals>.loss"])
    assert advice == "True" and restored == "True True"


def test_a_dispatch_point_made_by_hand_is_left_as_it_is(tmp_path):
    """Serving in place skips what is a dispatch point already (no dispatch point of one)."""
    from adcli.rules.inplace import serve_module

    module = types.ModuleType("handmade")
    module.f = dispatch(lambda x: x)
    served = serve_module(module, lambda f: True)
    assert served.changes == []
