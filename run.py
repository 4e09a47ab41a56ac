"""ragwatch: the one command, run from a checkout (`python run.py --help`).

The command lives in `ragwatch/zenml/cli.py`; an installed package runs it as `ragwatch`.
"""

from ragwatch.zenml.cli import cli

if __name__ == "__main__":
    cli()
