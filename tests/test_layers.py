"""The package's layering, enforced on its import graph (see :mod:`tests.support.layers`).

Layers, low to high: a module may import from its own layer or a lower one.  The facade
(``adcli/__init__.py``) may import only from the engine and base layers, and any module may import
it.  There are no import cycles, no imports inside functions except those ``LAZY`` and ``OPTIONAL``
admit, and no module over ``MAX_LINES`` lines except those ``LONG`` admits.

The first tests run the checker on small fake packages, to show it can fail; the rest run it on ``adcli/``.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pytest

from tests.support.layers import Report, check, format_sizes, long_modules, module_sizes

#: ``(layer, module prefixes)``, ordered low to high; a module's layer is that of its longest matching prefix.
LAYERS: list[tuple[str, list[str]]] = [
    ("base", ["adcli.errors", "adcli.units", "adcli.fileio", "adcli.version"]),
    # the engine in layers: the machinery (tracers, tape, registry, views, signatures, the
    # library dispatch points) knows no rule; the rules (engine/rules/) declare themselves to the
    # registry; the surface (NumPy's override protocols, the ndarray methods) finds them through
    # the registry, never by importing a rule module (NEVER); the package's face loads them all
    ("engine machinery", ["adcli.engine"]),
    ("engine rules", ["adcli.engine.rules"]),
    ("engine surface", ["adcli.engine.dispatch", "adcli.engine.tracer_api"]),
    ("engine face", ["=adcli.engine"]),
    ("measure", ["adcli.measure", "adcli.gradcheck"]),
    ("testing", ["adcli.testing"]),
    ("rules", ["adcli.rules"]),
    ("synth", ["adcli.synth"]),
    ("data", ["adcli.data"]),
    ("profiler", ["adcli.profiler"]),
    ("advisor", ["adcli.advisor"]),
    # a corpus of programs: runs each in a process of its own (never in this one), stores and reads profiles
    ("corpus", ["adcli.corpus"]),
    ("app", ["adcli.app"]),
    ("render", ["adcli.render"]),
    ("cli", ["adcli.cli", "adcli.cli_corpus", "adcli.cli_probe", "adcli.cli_types", "adcli.__main__"]),
    ("plugin", ["adcli.pytest_plugin"]),
]

#: Imports forbidden between two layers whatever their order: ``(importer, imported): reason``.
NEVER: dict[tuple[str, str], str] = {
    ("engine surface", "engine rules"): "the surface finds rules through the registry (OPERATORS, METHODS, ...)",
    # above the engine, a native rule is found through the registry too, never by its module
    **{(high, "engine rules"): "the engine's rules are found through its registry, not by their modules"
       for high in ("measure", "testing", "rules", "synth", "data", "profiler", "advisor", "app", "render", "plugin")},
    ("advisor", "profiler"): "the advisor reads profiles (adcli.data); it never runs a program",
    ("data", "profiler"): "a profile is data: reading one runs nothing",
    **{("cli", low): "the command line talks to the app and the renderers only"
       for low in ("engine machinery", "engine rules", "engine surface", "engine face", "measure", "testing", "rules", "data",
                   "profiler", "advisor", "corpus")},
    ("corpus", "profiler"): "a corpus runs each program in a process of its own (`python -m adcli profile`)",
}

#: The layers the facade ``adcli/__init__.py`` may import from.
FACADE_LAYERS = ("base", "engine machinery", "engine rules", "engine surface", "engine face")

#: Function-level imports of adcli modules that are allowed: ``(importer, imported): reason``.
LAZY: dict[tuple[str, str], str] = {
    # pytest loads the plugin in every run of an environment with adcli installed: the engine
    # (and NumPy) load only when a test uses one of its fixtures
    ("adcli.pytest_plugin", "adcli.testing"): "loaded when a test uses the adcli_check_rule fixture",
    ("adcli.pytest_plugin", "adcli.rules"): "loaded when a test uses the adcli_rules fixture",
    ("adcli.pytest_plugin", "adcli.engine.registry"): "loaded when a test declares rules through the plugin",
    ("adcli", "adcli.engine"): "adcli.grad & co.: the engine loads on first use, so `adcli` answers Ctrl-C while it loads",
    ("adcli.__main__", "adcli.cli"): "the console script catches a Ctrl-C while the command line's modules load",
    ("adcli.cli_probe", "adcli.__main__"): "a corpus program's inputs: the audit hook is in place before adcli and the "
                                            "program are imported",
    ("adcli", "adcli.render.notebook"): "adcli.profile(): the profiler and its results' display (text, Jupyter's HTML) "
                                        "load on first use, `import adcli` is the engine",
    ("adcli", "adcli.rules"): "adcli.rules: declaring and installing rules, loaded on first use",
}

#: Outside modules that may be imported inside a function, because they are optional: ``name: reason``.
OPTIONAL: dict[str, str] = {
    "tomllib": "standard library only from Python 3.11; the project supports 3.10",
    "autograd": "only the rule import and catalog need it; imported on first use",
    "scipy": "not a dependency; `adcli rules list` shows scipy.special's native rules when it is installed",
    "duckdb": "only `adcli corpus` reads or writes a corpus store: the other commands start without loading it",
    "distributed": "only `adcli corpus run` starts or reaches a Dask cluster: loaded when it does",
}

#: The most lines a module may have, and the modules allowed more: ``module: reason``.
MAX_LINES = 450
LONG: dict[str, str] = {}

ROOT = Path(__file__).resolve().parent.parent / "adcli"


def _lines(messages: list[str]) -> str:
    """Messages as a block, one per line, for an assertion message."""
    return "\n" + "\n".join(messages)


# --------------------------------------------------------------------------------------------
# The checker can fail: fake packages
# --------------------------------------------------------------------------------------------

FAKE_LAYERS: list[tuple[str, list[str]]] = [
    ("low", ["pkg.low"]),
    ("mid", ["pkg.mid", "pkg.mid2"]),
    ("high", ["pkg.high"]),
]


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """Write a fake package ``pkg`` from ``{relative path: source}``; return its directory."""
    root = tmp_path / "pkg"
    for rel, source in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return root


def _check(
    tmp_path: Path,
    files: dict[str, str],
    *,
    lazy: dict[tuple[str, str], str] | None = None,
    optional: Collection[str] = (),
) -> Report:
    """Check a fake package under :data:`FAKE_LAYERS`, whose facade may import only from ``low``."""
    return check(_tree(tmp_path, files), FAKE_LAYERS, lazy=lazy, optional=optional, facade_layers=("low",))


def test_fake_clean_tree_passes(tmp_path: Path) -> None:
    """Downward, same-layer and facade imports, and TYPE_CHECKING imports, are all fine."""
    report = _check(tmp_path, {
        "__init__.py": "from .low import thing\n__version__ = '1'\n",
        "low.py": "from __future__ import annotations\nimport os\nthing = 1\n",
        "mid/__init__.py": "from . import a\n",
        "mid/a.py": "from .. import __version__\nfrom ..low import thing\nfrom . import b\n",
        "mid/b.py": "import pkg.low as low\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
        "high.py": "from pkg.mid import a\nfrom .mid.b import low\n",
    })
    assert report.all() == []


def test_fake_upward_import_is_reported(tmp_path: Path) -> None:
    """A low-layer module importing a high-layer one, with file, line, modules and layers."""
    report = _check(tmp_path, {"low.py": "import os\n\nfrom .high import x\n", "high.py": "x = 1\n"})
    assert report.layers == [
        "pkg/low.py:3: pkg.low (low) imports pkg.high (high): a module may import only from its own layer or lower"
    ]


def test_fake_never_pair_is_reported_even_downward(tmp_path: Path) -> None:
    """A pair of layers ``never`` forbids is reported however the layers are ordered; others pass."""
    report = check(_tree(tmp_path, {"low.py": "x = 1\n", "mid.py": "from .low import x\n",
                                    "high.py": "from .low import x\nfrom .mid import x as y\n"}),
                   FAKE_LAYERS, facade_layers=("low",), never={("high", "low"): "test reason"})
    assert report.layers == [
        "pkg/high.py:1: pkg.high (high) imports pkg.low (low): high never imports low (test reason)"
    ]


def test_fake_exact_prefix_places_a_package_face_apart_from_its_modules(tmp_path: Path) -> None:
    """``=pkg.mid`` places the package ``pkg.mid`` (its __init__) alone: its modules keep their
    prefix's layer, so the face may import them while they may not import the face's layer."""
    layers = [("low", ["pkg.low", "pkg.mid"]), ("high", ["pkg.high", "=pkg.mid"])]
    report = check(_tree(tmp_path, {"low.py": "", "high.py": "",
                                    "mid/__init__.py": "from . import a\nfrom .. import high\n",
                                    "mid/a.py": "from .. import high\n"}), layers, facade_layers=("low",))
    assert report.layers == [
        "pkg/mid/a.py:1: pkg.mid.a (low) imports pkg.high (high): a module may import only from its own layer or lower"
    ]


def test_fake_upward_import_in_nested_blocks_is_reported(tmp_path: Path) -> None:
    """Imports under ``if``/``try``/class bodies count, and every violation is reported, not just the first."""
    report = _check(tmp_path, {
        "low.py": "if True:\n    import pkg.mid\ntry:\n    from pkg import high\nexcept ImportError:\n    pass\n"
                  "class C:\n    from .mid2 import y\n",
        "mid.py": "", "mid2.py": "y = 1\n", "high.py": "",
    })
    assert [m.split(": ")[0] for m in report.layers] == ["pkg/low.py:2", "pkg/low.py:4", "pkg/low.py:8"]
    assert "pkg.low (low) imports pkg.high (high)" in report.layers[1]
    assert "pkg.low (low) imports pkg.mid2 (mid)" in report.layers[2]


def test_fake_facade_import_of_a_high_layer_is_reported(tmp_path: Path) -> None:
    """The facade may import only from its permitted layers."""
    report = _check(tmp_path, {"__init__.py": "from .low import a\nfrom .mid import b\n",
                               "low.py": "a = 1\n", "mid.py": "b = 1\n"})
    assert report.layers == ["pkg/__init__.py:2: pkg (facade) imports pkg.mid (mid): the package facade may import only from low"]


def test_fake_function_level_cycle_is_reported(tmp_path: Path) -> None:
    """A two-module cycle closed by an import inside a function, with both edges."""
    report = _check(tmp_path, {
        "mid.py": "from . import mid2\n",
        "mid2.py": "def f():\n    from .mid import g\n    return g\n",
    }, lazy={("pkg.mid2", "pkg.mid"): "test"})
    assert report.cycles == [
        "cycle pkg.mid -> pkg.mid2 -> pkg.mid: pkg/mid.py:1: pkg.mid (mid) imports pkg.mid2 (mid); "
        "pkg/mid2.py:2: pkg.mid2 (mid) imports pkg.mid (mid)"
    ]
    assert report.lazy == []  # the allowlist admits the lazy import; the cycle is still reported


def test_fake_self_import_and_type_checking_cycle(tmp_path: Path) -> None:
    """A self-import is a cycle; a cycle closed only under ``if TYPE_CHECKING:`` is not."""
    report = _check(tmp_path, {
        "low.py": "import pkg.low\n",
        "mid.py": "from . import mid2\n",
        "mid2.py": "import typing\nif typing.TYPE_CHECKING:\n    from .mid import g\n",
    })
    assert report.cycles == ["cycle pkg.low -> pkg.low: pkg/low.py:1: pkg.low (low) imports pkg.low (low)"]


def test_fake_unknown_module_is_reported(tmp_path: Path) -> None:
    """A module that matches no prefix needs a layer (and ``pkg.mid`` does not match ``pkg.middle``)."""
    report = _check(tmp_path, {"middle.py": "", "low.py": "from . import middle\n"})
    assert report.unknown == ["pkg/middle.py:1: pkg.middle (no layer) needs a layer: add a prefix for it to LAYERS"]
    assert report.layers == []  # the unplaced module is reported once, as unknown


def test_fake_function_level_imports_are_reported(tmp_path: Path) -> None:
    """Imports inside functions, methods, nested functions and async functions; stdlib and package alike."""
    report = _check(tmp_path, {
        "low.py": "import json\n\ndef f():\n    import inspect\n    return inspect\n",
        "mid.py": "class C:\n    def m(self):\n        def inner():\n            from . import low\n        return inner\n",
        "high.py": "async def g():\n    import tomllib\n    from autograd.core import x\n    import autograd_extra\n",
    }, optional={"tomllib", "autograd"})
    assert report.lazy == [
        "pkg/high.py:4: pkg.high (high) imports autograd_extra (external) inside a function: import it at the top of "
        "the module, or list it in OPTIONAL if it is an optional dependency",
        "pkg/low.py:4: pkg.low (low) imports inspect (external) inside a function: import it at the top of the module, "
        "or list it in OPTIONAL if it is an optional dependency",
        "pkg/mid.py:4: pkg.mid (mid) imports pkg.low (low) inside a function: import it at the top of the module, "
        "or list it in LAZY with a reason",
    ]


def test_fake_lazy_allowlist_admits_and_goes_stale(tmp_path: Path) -> None:
    """A LAZY entry admits exactly its import; an entry nothing uses is reported."""
    report = _check(tmp_path, {"mid.py": "def f():\n    from . import low\n", "low.py": ""},
                    lazy={("pkg.mid", "pkg.low"): "test", ("pkg.mid", "pkg.high"): "gone"})
    assert report.lazy == ["LAZY entry pkg.mid -> pkg.high is not used: remove it"]


def test_fake_relative_resolution(tmp_path: Path) -> None:
    """``from ..b import c`` resolves against the package; ``c`` is a module when a file exists for it."""
    report = _check(tmp_path, {
        "mid/__init__.py": "from ..high import sub\n",
        "mid/deep/__init__.py": "",
        "mid/deep/x.py": "from ...high import value\nfrom ... import high\nfrom .... import beyond\n",
        "high/__init__.py": "value = 1\n",
        "high/sub/__init__.py": "",
        "low.py": "from .missing import y\n",
    })
    assert [m.split(": ", 1)[1] for m in report.layers] == [
        "pkg.mid (mid) imports pkg.high.sub (high): a module may import only from its own layer or lower",
        "pkg.mid.deep.x (mid) imports pkg.high (high): a module may import only from its own layer or lower",
        "pkg.mid.deep.x (mid) imports pkg.high (high): a module may import only from its own layer or lower",
    ]
    assert report.broken == [
        "pkg/mid/deep/x.py:3: pkg.mid.deep.x: relative import beyond the top-level package",
        "pkg/low.py:1: pkg.low (low) imports pkg.missing (no layer): no such module in the package",
    ]


def test_fake_long_module_is_reported(tmp_path: Path) -> None:
    """A module over the limit is reported unless allowlisted; an allowlist entry not needed is reported."""
    root = _tree(tmp_path, {"low.py": "x = 1\n" * 5, "mid.py": "x = 1\n" * 5, "high.py": "x = 1\n"})
    assert module_sizes(root)[:2] == [("pkg.low", 5), ("pkg.mid", 5)]
    assert long_modules(root, 4, {"pkg.mid": "test", "pkg.high": "stale"}) == [
        "pkg/low.py:1: pkg.low has 5 lines (limit 4): split it, or list it in LONG with a reason",
        "LONG entry pkg.high is not needed (1 lines): remove it",
    ]


def test_real_table_refuses_each_forbidden_import(tmp_path: Path) -> None:
    """The real LAYERS and NEVER, on a fake ``adcli`` with one forbidden import of each kind: each
    is reported (the rules this test file encodes can fail, not only the checker)."""
    root = tmp_path / "adcli"
    files = {
        "__init__.py": "", "errors.py": "", "testing.py": "from .rules import declare\n",
        "cli.py": "from .app import a\nfrom .profiler import api\nfrom .advisor import costs\n",
        "app/__init__.py": "", "app/a.py": "", "rules/__init__.py": "", "rules/declare.py": "",
        "advisor/__init__.py": "", "advisor/costs.py": "from ..profiler import api\nfrom ..data import model\n",
        "profiler/__init__.py": "", "profiler/api.py": "",
        "data/__init__.py": "", "data/model.py": "from ..profiler import api\n",
        "engine/__init__.py": "from . import dispatch, rules\n", "engine/core.py": "from .rules import shape\n",
        "engine/dispatch.py": "from .rules import shape\nfrom . import core\n",
        "engine/rules/__init__.py": "", "engine/rules/shape.py": "from .. import dispatch\n",
    }
    for rel, source in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(source)
    found = check(root, LAYERS, facade_layers=FACADE_LAYERS, never=NEVER).layers
    said = [m.split(": ", 1)[1] for m in found]
    assert said == [
        "adcli.advisor.costs (advisor) imports adcli.profiler.api (profiler): advisor never imports profiler "
        f"({NEVER['advisor', 'profiler']})",
        "adcli.cli (cli) imports adcli.profiler.api (profiler): cli never imports profiler "
        f"({NEVER['cli', 'profiler']})",
        "adcli.cli (cli) imports adcli.advisor.costs (advisor): cli never imports advisor "
        f"({NEVER['cli', 'advisor']})",
        "adcli.data.model (data) imports adcli.profiler.api (profiler): a module may import only from its own layer or lower",
        "adcli.engine.core (engine machinery) imports adcli.engine.rules.shape (engine rules): a module may import only "
        "from its own layer or lower",
        "adcli.engine.dispatch (engine surface) imports adcli.engine.rules.shape (engine rules): engine surface never "
        f"imports engine rules ({NEVER['engine surface', 'engine rules']})",
        "adcli.engine.rules.shape (engine rules) imports adcli.engine.dispatch (engine surface): a module may import only "
        "from its own layer or lower",
        "adcli.testing (testing) imports adcli.rules.declare (rules): a module may import only from its own layer or lower",
    ]


# --------------------------------------------------------------------------------------------
# The real package
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report() -> Report:
    """The checker's report on ``adcli/``."""
    return check(ROOT, LAYERS, lazy=LAZY, optional=OPTIONAL, facade_layers=FACADE_LAYERS, never=NEVER)


def test_every_module_has_a_layer(report: Report) -> None:
    """Every module is placed in a layer deliberately."""
    assert not report.unknown, _lines(report.unknown)


def test_imports_respect_layers(report: Report) -> None:
    """No module imports from a higher layer; the facade imports only from the engine and base layers."""
    assert not report.layers, _lines(report.layers)


def test_no_import_cycles(report: Report) -> None:
    """No cycle between modules, counting imports inside functions."""
    assert not report.cycles, _lines(report.cycles)


def test_no_function_level_imports(report: Report) -> None:
    """Imports belong at the top of the module, save those LAZY and OPTIONAL admit."""
    assert not report.lazy, _lines(report.lazy)


def test_no_broken_imports(report: Report) -> None:
    """Every import of an adcli module names a module that exists."""
    assert not report.broken, _lines(report.broken)


def test_module_sizes() -> None:
    """No module exceeds MAX_LINES lines, save those LONG admits (the size table is printed for ``-s``)."""
    print("\n" + format_sizes(module_sizes(ROOT)))
    problems = long_modules(ROOT, MAX_LINES, LONG)
    assert not problems, _lines(problems)
