"""PySpark glue: the shred job, generic DataFrame dedup and streaming, on any events manifest."""
