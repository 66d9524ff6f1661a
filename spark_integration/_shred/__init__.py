"""The shred job's Spark plan and its staged write (the command: `spark_integration.shredder`)."""
