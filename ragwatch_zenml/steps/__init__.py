"""Thin ZenML adapters: take config, call ragwatch, log metadata, return named artifacts."""
