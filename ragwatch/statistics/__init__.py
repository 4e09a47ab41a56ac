"""The statistics every figure is reported with: intervals of a mean and of a difference between runs
(`intervals`), prediction-powered estimates from a few human labels (`ppi`), and agreement between a
judge and labels (`agreement`). Pure functions of numbers: no metric names, no LLM."""
