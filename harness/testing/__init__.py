"""Fixture builders shared by the tests, the demo and the benchmarks.

They write real git repositories with the git command line and a fixed
identity and clock, so shas are reproducible run to run.
"""
