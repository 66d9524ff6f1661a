"""The transformer's engine (docs/transformer.md): the modern RDB Transformer's rules in plain Python.

- `config`, `stream_config`, `formats`, `monitoring`: the HOCON configs, the output mode, the
  `monitoring` section;
- `event`, `columnar`: enriched lines decoded as the Analytics SDK decodes them, one at a time or
  column by column;
- `jvm`, `jawn`, `circe`: how the reference's JVM renders numbers, instants and a hash map's keys;
  its JSON parser's errors; its JSON printer;
- `widerow`, `parquet_types`, `parquet`: wide-row JSON lines, and Parquet columns from JSON Schemas;
- `shred_mode`: the atomic TSV line, each entity as TSV (columns from its schema) or JSON;
- `schemas`, `entity_types`: what the transformer reads of a JSON Schema; a run's entity types;
- `bad_rows`: the transformer's bad rows (the `badrows` schemas);
- `parse_decide`: the steps the Spark job calls on each Arrow batch (`Parse`, `Decide`);
- `discovery`, `commit`, `message`, `queue`: which input folders are runs, how a run commits, its
  `shredding_complete` message and where it is sent;
- `windows`, `read_files`, `kinesis_input`: the stream transformer's windows, the files it read,
  its Kinesis input; `kinesis`: bad rows to Kinesis;
- `metrics`, `sentry`: what a run reports, and the exception that ends a job.
"""
