"""One-off studies: each measured something once, to make a choice; nothing imports them.

Run one from the repository root with `python -m lab.NAME [ARGS]`; `lab/README.md` says what each
measured and where its figures are. The maintained tools the product relies on are `benchmarks/`.
"""
