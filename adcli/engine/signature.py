"""Signatures: a callable plus the concrete types of its arguments, one value with one text form.

A :class:`Signature` (``numpy.kron(f64[2d,strided], f64[2d])``) is what the engine's error
messages, the registry of rules, the profiler, the advisor, ``adcli export`` and ``adcli check``
all use; nothing else builds or splits signature text. Its types are descriptors
(engine/descriptors.py, docs/descriptors.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .descriptors import IDENT, NAME_PART, Parser, describe, remember, shown


def signature_key(args: tuple, kwargs: dict) -> tuple:
    """The hashable registry key of a call: positional descriptors, then sorted keyword ones
    (``name=descriptor``). ``Signature.key`` is the same tuple."""
    key = tuple(map(describe, args))
    if kwargs:
        # the keyword part cached by the names (as passed) and their descriptors: the profiler
        # builds a key for every call it sees, and sorting and formatting it each time adds up
        parts = (tuple(kwargs), *[describe(v) for v in kwargs.values()])
        text = _KEYWORDS.get(parts)
        if text is None:  # sorted by name
            text = remember(_KEYWORDS, parts, tuple(f"{k}={d}" for k, d in sorted(zip(parts[0], parts[1:]))))
        key += text
    return key


_KEYWORDS: dict = {}


def call_signature(args: tuple, kwargs: dict) -> str:
    """``f64[2d], f64[2d], axis=int`` — the argument part of a signature string."""
    return ", ".join(signature_key(args, kwargs))


@dataclass(frozen=True)
class Signature:
    """A callable (``module``, ``qualname``) and the descriptors of a call's arguments:
    positional ``args``, then ``kwargs`` as ``(name, descriptor)`` pairs sorted by name.

    ``str()`` is ``module.qualname(args, name=kw)``, or ``module:qualname(...)`` when the
    qualname itself has dots (a method, a nested function), so :meth:`parse` reads back
    exactly what ``str`` wrote.
    """

    module: str
    qualname: str
    args: tuple = ()
    kwargs: tuple = ()

    @classmethod
    def of_call(cls, module: str, qualname: str, args: tuple, kwargs: dict) -> "Signature":
        """The signature of a call of ``module.qualname`` with these (possibly traced) values."""
        return cls(module, qualname, tuple(describe(a) for a in args),
                   tuple((k, describe(v)) for k, v in sorted(kwargs.items())))

    @classmethod
    def from_key(cls, module: str, qualname: str, key: tuple) -> "Signature":
        """From a registry key (positional descriptors, then ``name=descriptor`` strings)."""
        args, kwargs = [], []
        for d in key:
            m = _KEYWORD.match(d)
            if m:
                kwargs.append((m.group(1), m.group(2)))
            else:
                args.append(d)
        return cls(module, qualname, tuple(args), tuple(sorted(kwargs)))

    @property
    def function(self) -> str:
        """``module.qualname``: the callable's display name."""
        return f"{self.module}.{self.qualname}"

    @property
    def target(self) -> str:
        """``module:qualname``: how a rule declaration names a Python function."""
        return f"{self.module}:{self.qualname}"

    @property
    def key(self) -> tuple:
        """The registry key: positional descriptors, then ``name=descriptor``."""
        return self.args + tuple(f"{k}={d}" for k, d in self.kwargs)

    @property
    def is_numpy(self) -> bool:
        return self.module == "numpy" or self.module.startswith("numpy.")

    def __str__(self) -> str:
        name = self.target if "." in self.qualname else self.function
        return f"{name}({', '.join(self.key)})"

    @classmethod
    def parse(cls, text: str) -> "Signature":
        """The signature ``str`` wrote. Raises ValueError (one line) for anything else."""
        if not isinstance(text, str):
            raise ValueError(f"a signature is text, not {type(text).__name__}")
        m = _CALLABLE.match(text)
        if m is None or not text.endswith(")"):
            raise ValueError(f"not a signature: {shown(text)} (expected module.name(descriptor, ...))")
        name = m.group(0)[:-1]
        if ":" in name:
            module, _, qualname = name.partition(":")
        else:
            module, _, qualname = name.rpartition(".")
        if not module or not all(IDENT.fullmatch(p) or p == "?" for p in module.split(".")):
            raise ValueError(f"not a signature: {shown(text)} (bad module name)")
        if not all(NAME_PART.fullmatch(p) for p in qualname.split(".")):
            raise ValueError(f"not a signature: {shown(text)} (bad function name)")
        p = Parser(text, len(m.group(0)))
        args, kwargs = [], []
        if p.peek() != ")":
            while True:
                km = _KEYWORD_AT.match(text, p.i)
                if km:
                    p.i = km.end()
                    kwargs.append((km.group(1), p.descriptor()))
                elif kwargs:
                    p.fail("positional type after a keyword type")
                else:
                    args.append(p.descriptor())
                if not p.take(","):
                    break
        p.expect(")")
        if p.i != len(text):
            p.fail("text after the closing parenthesis")
        names = [k for k, _ in kwargs]
        if names != sorted(names) or len(set(names)) != len(names):
            raise ValueError(f"not a signature: {shown(text)} (keyword types must be unique and sorted)")
        return cls(module, qualname, tuple(args), tuple(kwargs))


_KEYWORD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$")
_KEYWORD_AT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)=")
_CALLABLE = re.compile(r"[A-Za-z_?][A-Za-z0-9_.:<>?]*\(")


