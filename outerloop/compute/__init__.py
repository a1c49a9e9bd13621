"""Compute backends: where jobs run (Slurm, or local background processes)."""
