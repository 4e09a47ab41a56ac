"""The maintained measurement tools the product relies on: calibration fits and their labelled data, the
gate's power, the judge's speed and calls, the intervals' coverage, the label plan, the monitor's drift
and feedback levels, the estimate, the local runtime's switches.

Run one with `python -m benchmarks NAME [ARGS]` from the repository root (`python -m benchmarks` lists
them); figures they measured are in `benchmarks/results/`. Logic a test needs lives in the package
(`ragwatch.simulation`, ...), and a tool that is a thin command over it is tested by running it. One-off
studies are in `lab/`, which nothing imports.
"""
