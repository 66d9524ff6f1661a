"""Generic dedup of any records: the engine, and its NDJSON and Arrow front ends."""
