"""Run a program under the engine and measure every gradient it takes (``adcli profile``)."""

from .paths import default_excluded

__all__ = ["default_excluded"]
