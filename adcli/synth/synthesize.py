"""``synthesize(func) -> Synthesis``: the rule module's text and a way to load it."""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field
from typing import Callable

from ..engine import allocator
from .analysis import Program, closure_values
from .generate import Generator
from .subset import parse


@dataclass
class Synthesis:
    """A synthesized rule: ``source``, the text of a module defining ``fwd`` and ``pullback``,
    for ``func``. ``load()`` runs it with func's globals and closure variables (as they are now,
    constants to the rule) and returns ``fwd``."""

    func: Callable
    source: str
    program: Program = field(repr=False)
    wrt: tuple | None = None  # the positions (or names) differentiated: all, if None

    @property
    def argnums(self) -> tuple | None:
        """The positions of the parameters differentiated (None: all)."""
        if self.wrt is None:
            return None
        params = self.program.params
        return tuple(sorted(i for i, p in enumerate(params) if p not in self.program.inactive))

    @property
    def filename(self) -> str:
        return f"<adcli.synth {self.func.__module__}.{self.func.__qualname__}>"

    def namespace(self) -> dict:
        """The module's namespace once run: a copy of func's globals, its closure variables, and
        what the module defines."""
        ns = dict(self.func.__globals__)
        ns.update(closure_values(self.func))
        # tracebacks through the generated code show its lines
        linecache.cache[self.filename] = (len(self.source), None, self.source.splitlines(True), self.filename)
        exec(compile(self.source, self.filename, "exec"), ns)  # noqa: S102 - the text synthesize() wrote
        return ns

    def parts(self, fwd: str = "fwd", pullback: str = "pullback") -> tuple[list, list, str]:
        """The module's pieces, its two functions named ``fwd`` and ``pullback`` (generate.py)."""
        return Generator(self.program).parts(fwd, pullback)

    def rule(self) -> Callable:
        """The rule to declare: ``fwd``, its pullback's cotangents trimmed to the arguments a
        call passes by position (a parameter left to its default has none)."""
        fwd = self.load()

        def rule(*args, **kwargs):
            ans, pullback = fwd(*args, **kwargs)
            n = len(args)
            return ans, (lambda g: pullback(g)[:n])
        return rule

    def load(self) -> Callable:
        """The rule's ``fwd(*args) -> (ans, pullback)``. Like a gradient, it keeps glibc's freed
        memory for the next run (engine/allocator.py: the values it keeps are freed together)."""
        allocator.keep_gradient_memory()
        return self.namespace()["fwd"]


def synthesize(func: Callable, args: tuple | None = None, kwargs: dict | None = None, wrt=None) -> Synthesis:
    """The rule of ``func`` by source transformation, or SynthesisError naming the first
    construct outside the subset (adcli.synth's docstring) and its ``file:line``. ``args``: a
    sample of the signature the rule is for: the kinds of its arguments (a float, an int, an
    array of n dimensions) let scalars' adjoints be written as plain arithmetic (kinds.py);
    the rule is then for that signature only (``kwargs``: its keyword arguments, if any).
    ``wrt``: the arguments differentiated (positions, or keyword arguments' names; all if None):
    the others' adjoints are not computed, and the pullback's cotangent for each is None (the
    engine raises, naming the rule, where a call traces one)."""
    program = parse(func, args, kwargs, wrt)
    every = wrt is None or not program.inactive  # every parameter differentiated: a rule for any traced ones
    return Synthesis(func, Generator(program).module(), program, None if every else tuple(wrt))
