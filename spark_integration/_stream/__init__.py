"""The stream transformer's inputs beyond Spark's own: Kinesis, a Python data source (the command:
`spark_integration.stream_transformer`)."""
