"""The transformer's engine (docs/transformer.md): the modern RDB Transformer's rules in plain Python.

- `config`: the batch job's HOCON config;
- `decode/`: enriched lines decoded as the Analytics SDK decodes them, one at a time or column by
  column; the reference's JSON reader and printer, and its parser's errors;
- `output/`: the output mode, wide-row JSON, Parquet columns from JSON Schemas, shred mode, bad rows
  (to files or Kinesis), numbers and instants as the reference's JVM renders them;
- `parse_decide`: the steps the Spark job calls on each Arrow batch (`Parse`, `Decide`);
- `run/`: which input folders are runs, one run from claim to commit, its message and where it is
  sent, what it reports, the exception that ends a job;
- `stream/`: the stream transformer's config, windows, the files it read, its Kinesis input;
- `face`: what the glue takes of all this.
"""
