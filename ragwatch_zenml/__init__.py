"""The ZenML half of ragwatch: the outer layer, which the core (`ragwatch.*`) never imports.

`cli` is the command (`ragwatch`, `python run.py`), `env` the process environment set before ZenML is
imported, `readback` reads runs and artifacts back from the store, `steps` and `pipelines` the ZenML
adapters over the core, `commands` what the CLI's subcommands do.
"""
