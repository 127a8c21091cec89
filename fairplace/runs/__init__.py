"""Runs of many instances or simulations: Dask batches, sweeps, experiments and paper reproduction."""
