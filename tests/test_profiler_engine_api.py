"""The profiler reads the engine through its public doors only: hooks.py (the session),
tape.backward (the one reverse pass, with a visitor) and introspect.py (what a node is). No
profiler module imports a private (``_``-prefixed) engine name or a rule module, or reads a
private attribute of an engine module it imported: a rule's internals can change without a
profiler noticing, and the profiler cannot grow a second copy of the reverse loop."""

import ast
from pathlib import Path

import pytest

import adcli.profiler

PROFILER = Path(adcli.profiler.__file__).parent
MODULES = sorted(PROFILER.glob("*.py"))


def engine_imports(tree: ast.Module):
    """(module, name, node) for each name a profiler module imports from adcli.engine (relative or not)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = ("." * node.level) + (node.module or "")
            if module.startswith(("..engine", "adcli.engine")) or (module == ".." and any(
                    a.name == "engine" for a in node.names)):
                for alias in node.names:
                    yield module, alias.name, alias.asname or alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("adcli.engine"):
                    yield alias.name, "", alias.asname or alias.name


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_profiler_module_imports_a_private_engine_name_or_a_rule_module(path):
    tree = ast.parse(path.read_text())
    bad = [(m, n) for m, n, _ in engine_imports(tree)
           if n.startswith("_") or ".rules" in m or m.endswith("engine.rules") or n == "rules"
           or any(part.startswith("_") for part in m.lstrip(".").split("."))]
    assert not bad, f"{path.name} imports engine internals: {bad}"
    # nor reads a private attribute of an engine module it imported (hooks._session, ...)
    modules = {bound for m, n, bound in engine_imports(tree) if m.endswith("engine") or m == ".."}
    private = [f"{node.value.id}.{node.attr}" for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
               and node.value.id in modules and node.attr.startswith("_")]
    assert not private, f"{path.name} reads engine internals: {private}"


def test_the_check_sees_the_modules_that_read_nodes():
    names = {p.name for p in MODULES}
    assert {"decompose.py", "stretches.py", "closed_forms.py", "session.py", "replay.py"} <= names
    tree = ast.parse((PROFILER / "decompose.py").read_text())
    assert ("..engine", "introspect", "introspect") in set(engine_imports(tree))


@pytest.mark.parametrize("name", ["stretches.py", "decompose.py"])
def test_the_profilers_reverse_passes_are_the_engines(name):
    # each runs engine.tape.backward with a visitor; none has a loop over the tape of its own
    tree = ast.parse((PROFILER / name).read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "backward" and len(n.args) == 4]
    assert calls
    reversed_ranges = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                       and n.func.id == "range" and len(n.args) == 3]
    assert not reversed_ranges  # range(start, -1, -1): the engine's loop, copied


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_profiler_module_reads_a_nodes_tuple(path):
    # node[0], node[1].name, node[2]...: a layout only the node's kind knows (engine.introspect asks it)
    tree = ast.parse(path.read_text())
    reads = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
             and n.value.id == "node" and not isinstance(n.slice, ast.Slice)]
    assert not reads, f"{path.name} reads a node's slots at lines {reads}"
