"""The transformer's engine (docs/transformer.md): the modern RDB Transformer's rules in plain Python,
in rooms that import only the rooms before them here (`tests/core/test_layers.py`).

- `decode/`: enriched lines decoded as the Analytics SDK decodes them; the reference's JSON reader
  and printer, its parser's errors, numbers and instants as its JVM renders them;
- `output/`: the output mode, wide-row JSON, Parquet columns from JSON Schemas, shred mode, bad rows;
- at the root: `config` and `monitoring`, the batch job's HOCON config and the section both
  transformers share; `columnar`, the parse over a whole Arrow batch; `parse_decide`, the steps the
  Spark job calls on each Arrow batch (`Parse`, `Decide`);
- `run/`: which input folders are runs, one run from claim to commit, its message and where it is
  sent, bad rows to Kinesis, what a run reports, the exception that ends a job;
- `stream/`: the stream transformer's config, windows, the files it read, its Kinesis input;
- `face`: what the glue takes of all this.
"""
