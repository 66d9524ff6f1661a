"""The manifest: its contract, the run ledger and processing table beside it, how a manifest is
opened (URL, config, plugins) and reached from Spark's workers, and who holds a claim."""
