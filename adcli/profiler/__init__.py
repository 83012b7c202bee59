"""Run a program under the engine and measure every gradient it takes (``adcli profile``)."""

from .paths import default_excluded
from .script import load_script

__all__ = ["default_excluded", "load_script"]
