"""The run's sums as typed data (docs/profile-format.md): arrays stored, and the totals over
every gradient (with how many of them were recorded in full, profiler/sampling.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Allocs:
    """Arrays the engine stored: (count, bytes) in the forward and in the reverse pass."""

    forward: tuple = (0, 0)
    reverse: tuple = (0, 0)

    @property
    def count(self) -> int:
        return self.forward[0] + self.reverse[0]

    @property
    def bytes(self) -> int:
        return self.forward[1] + self.reverse[1]

    def __add__(self, other: "Allocs") -> "Allocs":
        return Allocs((self.forward[0] + other.forward[0], self.forward[1] + other.forward[1]),
                      (self.reverse[0] + other.reverse[0], self.reverse[1] + other.reverse[1]))

    def to_json(self) -> dict:
        return {"forward": list(self.forward), "reverse": list(self.reverse)}



@dataclass
class Totals:
    gradients: int = 0
    forward_s: float = 0.0
    reverse_s: float = 0.0
    # gradients recorded in full (profiler.sampling); the call tree's figures are scaled from
    # them to all ``gradients``. None: every one (profiles from before the field).
    profiled_gradients: int | None = None

    @property
    def sampled(self) -> bool:
        """Whether the call tree's figures were scaled from some of the gradients."""
        return self.profiled_gradients is not None and self.profiled_gradients < self.gradients

    @property
    def gradient_s(self) -> float:
        return self.forward_s + self.reverse_s

    def to_json(self) -> dict:
        return {"gradients": self.gradients, "profiled_gradients": self.profiled_gradients,
                "forward_s": self.forward_s, "reverse_s": self.reverse_s,
                "gradient_s": self.gradient_s}
