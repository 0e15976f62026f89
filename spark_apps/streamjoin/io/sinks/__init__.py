"""Sinks: where a query's rows go (JSON Lines folders and stdout, Kafka, Kinesis, S3 tables), released in order and exactly once."""
