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


FORMATS = ("table", "json")


@cli.group()
def rules() -> None:
    """Inspect the rules adcli has, derives, and can import from autograd."""


@rules.command("list")
@click.option("--source", type=click.Choice(["native", "autograd", "all"]), default="all", show_default=True,
              help="native: what the engine has (native rules, verified derivations, declared rules); "
                   "autograd: what can be imported; all: both.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format.")
def rules_list(source: str, fmt: str) -> None:
    """List rules by callable and source."""
    from .render.rules import render_list
    from .rules.listing import list_rules

    click.echo(render_list(list_rules(source), fmt))


@rules.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
def rules_show(name: str, fmt: str) -> None:
    """Show what adcli knows about one callable, e.g. `numpy.kron` or `np.linalg.cholesky`."""
    from .render.rules import render_show
    from .rules.listing import show_rule

    click.echo(render_show(show_rule(name), fmt))


def main() -> None:
    cli(prog_name="adcli")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
