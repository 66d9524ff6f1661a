"""The stream transformer's own pieces: its config (`stream_config`), its windows and book of
micro-batches (`windows`), the files its file source read (`read_files`) and its Kinesis input
(`kinesis_input`)."""
