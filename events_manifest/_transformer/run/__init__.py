"""One run from its claim to its commit: what an invocation's runs share (`job`), the run's flow
under its claim and ledger record (`run_flow`), which input folders are runs (`discovery`), the
commit and its `shredding_complete` message (`commit`, `message`) and where it is sent (`queue`),
bad rows to a Kinesis stream (`kinesis`), what a run reports (`metrics`) and the exception that
ends a job (`sentry`)."""
