"""``synthesize(func) -> Synthesis``: the rule module's text and a way to load it."""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field
from typing import Callable

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
        """The rule's ``fwd(*args) -> (ans, pullback)``."""
        return self.namespace()["fwd"]


def synthesize(func: Callable, args: tuple | None = None, kwargs: dict | None = None) -> Synthesis:
    """The rule of ``func`` by source transformation, or SynthesisError naming the first
    construct outside the subset (adcli.synth's docstring) and its ``file:line``. ``args``: a
    sample of the signature the rule is for: the kinds of its arguments (a float, an int, an
    array of n dimensions) let scalars' adjoints be written as plain arithmetic (kinds.py);
    the rule is then for that signature only (``kwargs``: its keyword arguments, if any)."""
    program = parse(func, args, kwargs)
    return Synthesis(func, Generator(program).module(), program)
