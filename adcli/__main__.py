"""``python -m adcli``: the same as the ``adcli`` console script."""

from .cli import main

main()
