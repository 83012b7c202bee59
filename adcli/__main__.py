"""``python -m adcli`` and the ``adcli`` console script.

The command line (adcli.cli) is imported here, inside ``main``: NumPy, the engine and the
profiler take most of a second to load, and a Ctrl-C in that second exits as it does later
(status 130, one line on stderr), not with a traceback.
"""

import sys


def main() -> None:
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("\nadcli: interrupted\n")
        sys.exit(130)
    run()


if __name__ == "__main__":
    main()
