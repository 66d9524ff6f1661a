"""The transformer's engine (docs/transformer.md): the modern RDB Transformer's rules in plain Python.

- `config`: the HOCON config and the command line's values;
- `event`: enriched lines decoded as the Analytics SDK decodes them;
- `jvm`: how the JVM renders numbers, instants and a hash map's keys;
- `widerow`: an event as a wide-row JSON line;
- `parquet_types`, `parquet`: wide-row Parquet columns from JSON Schemas, and an event's values in them;
- `shredded`: shred mode: the atomic TSV line, each entity as TSV (columns from its schema) or JSON;
- `schemas`: what the transformer reads of a JSON Schema;
- `bad_rows`: the transformer's bad rows;
- `batch`: the steps the Spark job calls on each Arrow batch;
- `discovery`: which folders of the input are runs to transform;
- `message`, `queue`: the `shredding_complete` message that commits a run, and where it is sent.
"""
