"""An import-graph checker for a package's layering, built on :mod:`ast` alone.

The checker reads every ``.py`` file under a package root, collects every import statement (at
module level, inside ``if``/``try``/class bodies, and inside function bodies at any depth), resolves
relative imports, and reports:

* layer violations: a module importing from a higher layer than its own;
* modules that match no layer prefix (every module is placed deliberately);
* import cycles between the package's modules (strongly connected components, self-imports);
* imports inside function bodies that no allowlist admits;
* modules longer than a line limit.

Every report is a list of one-line messages naming the file, line, importing module, imported
module and both layers, so a test can show all violations at once.  The checker takes a package
root and a layer table, so tests can run it on small fake trees as well as on the real package.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: A layer table: ``(layer name, module prefixes)`` pairs ordered from the lowest layer to the highest.
LayerTable = Sequence[tuple[str, Sequence[str]]]

#: The pseudo-layer of the package facade (its ``__init__.py``).
FACADE = "facade"
#: The pseudo-layer shown for modules outside the package (stdlib and third-party).
EXTERNAL = "external"
#: The pseudo-layer shown for package modules that match no prefix.
NO_LAYER = "no layer"


@dataclass(frozen=True)
class Import:
    """One imported module, as one import statement names it."""

    path: Path  #: the importing file
    line: int  #: the import statement's line
    importer: str  #: the importing module, e.g. ``adcli.cli``
    target: str  #: the imported module, resolved and absolute, e.g. ``adcli.render.rules`` or ``json``
    in_function: bool  #: the statement is inside a function (or lambda) body, at any depth
    type_checking: bool  #: the statement is under ``if TYPE_CHECKING:``


@dataclass
class Report:
    """All the violations one run of :func:`check` found, one message per line, by kind."""

    layers: list[str] = field(default_factory=list)  #: a module imports from a higher layer
    unknown: list[str] = field(default_factory=list)  #: a module matches no layer prefix
    cycles: list[str] = field(default_factory=list)  #: a cycle between modules, one per component
    lazy: list[str] = field(default_factory=list)  #: a function-level import no allowlist admits; an unused LAZY entry
    broken: list[str] = field(default_factory=list)  #: an import of a package module that does not exist

    def all(self) -> list[str]:
        """Every violation of every kind."""
        return self.layers + self.unknown + self.cycles + self.lazy + self.broken


# --------------------------------------------------------------------------------------------
# Discovery and import collection
# --------------------------------------------------------------------------------------------


def discover(root: Path) -> dict[str, Path]:
    """Map each module under the package directory ``root`` to its file.

    The package is named after ``root``; ``pkg/__init__.py`` is module ``pkg`` and
    ``pkg/sub/__init__.py`` is ``pkg.sub``.
    """
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    """Whether an ``if`` test is ``TYPE_CHECKING`` or ``<anything>.TYPE_CHECKING``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Collector(ast.NodeVisitor):
    """Visit one module's tree, yielding each import statement with its context."""

    def __init__(self) -> None:
        self.found: list[tuple[ast.Import | ast.ImportFrom, bool, bool]] = []
        self._function_depth = 0
        self._type_checking_depth = 0

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self._function_depth += 1
        self.generic_visit(node)
        self._function_depth -= 1

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_Lambda = _visit_function

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.visit(node.test)
        self._type_checking_depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self._type_checking_depth -= 1
        for stmt in node.orelse:
            self.visit(stmt)

    def _record(self, node: ast.Import | ast.ImportFrom) -> None:
        self.found.append((node, self._function_depth > 0, self._type_checking_depth > 0))

    visit_Import = _record
    visit_ImportFrom = _record


def _package_of(module: str, path: Path) -> str:
    """The package a module's relative imports resolve against (an ``__init__.py`` is its own package)."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def collect_imports(root: Path, modules: Mapping[str, Path] | None = None) -> tuple[list[Import], list[str]]:
    """Every import in the package at ``root``, resolved to absolute module names.

    ``from pkg import name`` resolves to ``pkg.name`` when that is a module of the package, else to
    ``pkg``.  ``from __future__`` imports are not imports and are skipped.  Returns the imports and
    messages for relative imports that reach above the package (which Python refuses).
    """
    modules = discover(root) if modules is None else modules
    imports: list[Import] = []
    errors: list[str] = []
    seen: set[tuple[Path, int, str, bool, bool]] = set()
    for module, path in modules.items():
        collector = _Collector()
        collector.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        for node, in_function, type_checking in collector.found:
            for target in _targets(node, module, path, modules, errors, root):
                key = (path, node.lineno, target, in_function, type_checking)
                if key not in seen:
                    seen.add(key)
                    imports.append(Import(path, node.lineno, module, target, in_function, type_checking))
    return imports, errors


def _targets(
    node: ast.Import | ast.ImportFrom,
    module: str,
    path: Path,
    modules: Mapping[str, Path],
    errors: list[str],
    root: Path,
) -> Iterator[str]:
    """The absolute modules one import statement imports."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
        return
    if node.level == 0:
        if node.module == "__future__":
            return
        base = node.module or ""
    else:
        parts = _package_of(module, path).split(".")
        if node.level - 1 >= len(parts):
            errors.append(f"{_rel(path, root)}:{node.lineno}: {module}: relative import beyond the top-level package")
            return
        base = ".".join(parts[: len(parts) - (node.level - 1)])
        if node.module:
            base = f"{base}.{node.module}"
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        yield sub if alias.name != "*" and sub in modules else base


# --------------------------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------------------------


def _matches(module: str, prefix: str) -> bool:
    """Whether ``prefix`` names ``module`` or a package containing it (``a.b`` does not match ``a.bc``)."""
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str, layers: LayerTable, facade: str) -> str:
    """The layer of a package module: the layer of its longest matching prefix (a prefix written
    ``=name`` matches the module ``name`` alone, and wins over ``name`` as a prefix).

    The facade (the package itself) is :data:`FACADE`; a module no prefix matches is :data:`NO_LAYER`;
    a module outside the package is :data:`EXTERNAL`.
    """
    if module == facade:
        return FACADE
    if not _matches(module, facade):
        return EXTERNAL
    best, best_len = NO_LAYER, -1.0
    for name, prefixes in layers:
        for prefix in prefixes:
            if prefix.startswith("="):  # "=pkg.sub": that module alone (a package's __init__), not its modules
                if module == prefix[1:] and len(prefix) - 0.5 > best_len:
                    best, best_len = name, len(prefix) - 0.5
            elif _matches(module, prefix) and len(prefix) > best_len:
                best, best_len = name, len(prefix)
    return best


def _rel(path: Path, root: Path) -> str:
    """A file's path as shown in messages: relative to the package's parent directory."""
    return path.relative_to(root.parent).as_posix()


def _describe(imp: Import, layers: LayerTable, root: Path) -> str:
    """``file:line: importer (layer) imports target (layer)``."""
    facade = root.name
    return (
        f"{_rel(imp.path, root)}:{imp.line}: {imp.importer} ({layer_of(imp.importer, layers, facade)}) "
        f"imports {imp.target} ({layer_of(imp.target, layers, facade)})"
    )


def _layer_violations(imports: Sequence[Import], layers: LayerTable, root: Path, facade_layers: Collection[str],
                      lazy: Collection[tuple[str, str]] = (), never: Mapping[tuple[str, str], str] | None = None) -> list[str]:
    """Imports from a higher layer, imports ``never`` forbids between two layers however they are
    ordered (``(importer layer, imported layer): reason``), and facade imports outside
    ``facade_layers`` (except the function-level ones ``lazy`` admits: a facade attribute that loads
    a higher layer on first use)."""
    never = {} if never is None else never
    facade = root.name
    rank = {name: i for i, (name, _) in enumerate(layers)}
    out: list[str] = []
    for imp in imports:
        if not _matches(imp.target, facade):
            continue
        src, dst = layer_of(imp.importer, layers, facade), layer_of(imp.target, layers, facade)
        if dst == FACADE or NO_LAYER in (src, dst):
            continue  # anyone may import the facade; unplaced modules are reported on their own
        if src == FACADE:
            if dst not in facade_layers and not (imp.in_function and (imp.importer, imp.target) in lazy):
                allowed = ", ".join(facade_layers)
                out.append(f"{_describe(imp, layers, root)}: the package facade may import only from {allowed}")
        elif rank[dst] > rank[src]:
            out.append(f"{_describe(imp, layers, root)}: a module may import only from its own layer or lower")
        elif (src, dst) in never and not (imp.in_function and (imp.importer, imp.target) in lazy):
            out.append(f"{_describe(imp, layers, root)}: {src} never imports {dst} ({never[src, dst]})")
    return out


def _unknown_modules(modules: Mapping[str, Path], layers: LayerTable, root: Path) -> list[str]:
    """A message for each module that matches no layer prefix."""
    return [
        f"{_rel(path, root)}:1: {module} ({NO_LAYER}) needs a layer: add a prefix for it to LAYERS"
        for module, path in modules.items()
        if layer_of(module, layers, root.name) == NO_LAYER
    ]


def _broken_imports(imports: Sequence[Import], modules: Mapping[str, Path], layers: LayerTable, root: Path) -> list[str]:
    """Imports of package modules that do not exist."""
    return [
        f"{_describe(imp, layers, root)}: no such module in the package"
        for imp in imports
        if _matches(imp.target, root.name) and imp.target not in modules
    ]


# --------------------------------------------------------------------------------------------
# Cycles
# --------------------------------------------------------------------------------------------


def _strongly_connected(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph`` (iterative, so deep graphs are fine)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _shortest_cycle(start: str, graph: Mapping[str, Collection[str]], within: Collection[str]) -> list[str]:
    """The shortest path ``start -> ... -> start`` inside the component ``within``."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(graph.get(node, ())):
                if child not in within:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return [start]  # unreachable for a real component


def _cycles(imports: Sequence[Import], layers: LayerTable, root: Path) -> list[str]:
    """One message per import cycle: each strongly connected component of size > 1, and each self-import.

    Imports under ``if TYPE_CHECKING:`` do not run, so they do not count; imports inside functions do.
    """
    facade = root.name
    graph: dict[str, set[str]] = {}
    first: dict[tuple[str, str], Import] = {}
    for imp in imports:
        if imp.type_checking or not _matches(imp.target, facade):
            continue
        graph.setdefault(imp.importer, set()).add(imp.target)
        graph.setdefault(imp.target, set())
        first.setdefault((imp.importer, imp.target), imp)
    out: list[str] = []
    for component in _strongly_connected(graph):
        start = component[0]
        if len(component) == 1 and start not in graph[start]:
            continue
        cycle = _shortest_cycle(start, graph, set(component))
        edges = "; ".join(_describe(first[a, b], layers, root) for a, b in zip(cycle, cycle[1:]))
        others = [m for m in component if m not in cycle]
        extra = f" (the same cycle group also holds: {', '.join(others)})" if others else ""
        out.append(f"cycle {' -> '.join(cycle)}: {edges}{extra}")
    return out


# --------------------------------------------------------------------------------------------
# Function-level imports
# --------------------------------------------------------------------------------------------


def _lazy_violations(
    imports: Sequence[Import],
    layers: LayerTable,
    root: Path,
    lazy: Mapping[tuple[str, str], str],
    optional: Collection[str],
) -> list[str]:
    """Imports inside functions that neither allowlist admits.

    A package module imported inside a function must be listed in ``lazy`` as ``(importer, target)``;
    an outside module must be (or be under) a name in ``optional``.
    """
    out: list[str] = []
    for imp in imports:
        if not imp.in_function:
            continue
        if _matches(imp.target, root.name):
            if (imp.importer, imp.target) in lazy:
                continue
            hint = "import it at the top of the module, or list it in LAZY with a reason"
        else:
            if any(_matches(imp.target, name) for name in optional):
                continue
            hint = "import it at the top of the module, or list it in OPTIONAL if it is an optional dependency"
        out.append(f"{_describe(imp, layers, root)} inside a function: {hint}")
    return out


def stale_lazy(imports: Sequence[Import], lazy: Mapping[tuple[str, str], str]) -> list[str]:
    """Entries of ``lazy`` no function-level import uses any more (so the allowlist only shrinks)."""
    used = {(imp.importer, imp.target) for imp in imports if imp.in_function}
    return [f"LAZY entry {importer} -> {target} is not used: remove it"
            for importer, target in lazy if (importer, target) not in used]


# --------------------------------------------------------------------------------------------
# The checker
# --------------------------------------------------------------------------------------------


def check(
    root: Path,
    layers: LayerTable,
    *,
    lazy: Mapping[tuple[str, str], str] | None = None,
    optional: Collection[str] = (),
    facade_layers: Collection[str] = ("base", "engine"),
    never: Mapping[tuple[str, str], str] | None = None,
) -> Report:
    """Check the layering of the package whose directory is ``root``.

    ``layers`` orders the layers from low to high; ``lazy`` admits ``(importer, target)``
    function-level imports of package modules; ``optional`` admits function-level imports of outside
    modules; ``facade_layers`` are the layers the facade (``root/__init__.py``) may import from;
    ``never`` forbids imports between two layers, ``(importer layer, imported layer): reason``, even
    downward (the advisor reads profiles but never runs a program).
    """
    lazy = {} if lazy is None else lazy
    modules = discover(root)
    imports, errors = collect_imports(root, modules)
    return Report(
        layers=_layer_violations(imports, layers, root, facade_layers, lazy, never),
        unknown=_unknown_modules(modules, layers, root),
        cycles=_cycles(imports, layers, root),
        lazy=_lazy_violations(imports, layers, root, lazy, optional) + stale_lazy(imports, lazy),
        broken=errors + _broken_imports(imports, modules, layers, root),
    )


# --------------------------------------------------------------------------------------------
# Module sizes
# --------------------------------------------------------------------------------------------


def module_sizes(root: Path) -> list[tuple[str, int]]:
    """``(module, lines)`` for every module under ``root``, longest first."""
    sizes = [(module, len(path.read_text(encoding="utf-8").splitlines())) for module, path in discover(root).items()]
    return sorted(sizes, key=lambda item: (-item[1], item[0]))


def format_sizes(sizes: Sequence[tuple[str, int]]) -> str:
    """A plain two-column table of module sizes."""
    width = max((len(module) for module, _ in sizes), default=6)
    rows = [f"{'module':<{width}}  lines", f"{'-' * width}  -----"]
    rows += [f"{module:<{width}}  {lines:>5}" for module, lines in sizes]
    return "\n".join(rows)


def long_modules(root: Path, limit: int, allow: Mapping[str, str]) -> list[str]:
    """Modules over ``limit`` lines that ``allow`` does not list, and ``allow`` entries no longer needed."""
    modules = discover(root)
    sizes = dict(module_sizes(root))
    out = [
        f"{_rel(modules[module], root)}:1: {module} has {lines} lines (limit {limit}): split it, or list it in LONG with a reason"
        for module, lines in sizes.items()
        if lines > limit and module not in allow
    ]
    out += [
        f"LONG entry {module} is not needed ({'no such module' if module not in sizes else f'{sizes[module]} lines'}): remove it"
        for module in allow
        if sizes.get(module, 0) <= limit
    ]
    return out
