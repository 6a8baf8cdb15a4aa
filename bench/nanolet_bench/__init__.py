"""nanolet's benchmark suite (bench/bench.py is its command line): one module
per measurement, the Harness (harness.py) they share, and the one list of
environment knobs (knobs.py)."""
