"""ragwatch: the one command, run from a checkout (`python run.py --help`).

The command lives in `ragwatch_zenml/cli.py`; an installed package runs it as `ragwatch`.
"""

from ragwatch_zenml.cli import cli

if __name__ == "__main__":
    cli()
