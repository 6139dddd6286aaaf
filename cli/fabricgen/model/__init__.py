"""Frozen types only: the catalog's hardware, the Cluster built from a spec (one module per spec section), and the
compiled topology with its cables and address plan. No stage logic lives here; every stage and feature reads it."""
