"""The transformer's Spark side: the job an invocation's runs share (`job`) and one run's lines
decided and written (`rows`); both commands, `spark_integration.transformer` and
`spark_integration.stream_transformer`, run them."""
