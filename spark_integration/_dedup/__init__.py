"""Generic dedup of any DataFrame (`dataframe`) and of a stream, one micro-batch at a time
(`stream`), through the manifest: the public `spark_integration.deduplicate` and
`deduplicate_stream`."""
