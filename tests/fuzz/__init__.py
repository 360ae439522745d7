"""The plan fuzzer (fuzz_plan.c, run_fuzz.py), its seed corpus and the regression replay test."""
