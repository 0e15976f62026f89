"""The micro-batch engine: joins run once per micro-batch by Spark's batch engine over the staged steps, with no Spark streaming query."""
