"""Decisions from runs: compare, gate, calibrate, pairwise judging, A/B experiments."""
