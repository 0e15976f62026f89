"""Sources: stream inputs staged for Spark (files, S3 landing zones, Kafka, Kinesis, PostgreSQL CDC), tables read whole, snapshots."""
