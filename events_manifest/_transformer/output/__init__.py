"""What a run writes: the output mode (`formats`), wide-row JSON lines (`widerow`), Parquet
columns from JSON Schemas and their rows (`parquet_types`, `parquet`), shred mode's TSV and JSON
(`shred_mode`), what is read of a schema and a run's entity types (`schemas`, `entity_types`), and
bad rows (`bad_rows`)."""
