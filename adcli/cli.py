"""The ``adcli`` command line: thin click glue over the library API.

Every AdcliError becomes a one-line message on stderr and exit status 2 here, in one place;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import sys

import click

from . import __version__
from .errors import AdcliError


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except AdcliError as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(f"adcli: error: {exc}", err=True)
            ctx.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="adcli")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
def cli(debug: bool) -> None:
    """adcli: find the AD rules worth writing or importing for your NumPy program."""


def main() -> None:
    cli(prog_name="adcli")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
