"""What the Spark jobs share: the seam between Spark lines (`api`), Hadoop's file systems
(`storage`), reading enriched lines (`enriched`) and the scan both batch jobs start with (`scan`),
where Spark hands Arrow batches to the core (`udfs`), how a command runs and a failed Spark job is
typed (`running`, `failures`), a local session's Python daemon and settings for a while."""
