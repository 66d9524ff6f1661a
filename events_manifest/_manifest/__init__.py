"""The manifest: its contract, the run ledger and processing table beside it, and who holds a
claim. Opening one (URL, config, plugins) is `_opening`, above the backends."""
