"""adcli's version, in one place (the facade re-exports it; modules import it from here, not
from the facade, so that the facade's lazy ``adcli.profile`` forms no import cycle)."""

__version__ = "0.1.0"
