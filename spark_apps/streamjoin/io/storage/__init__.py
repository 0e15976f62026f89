"""Storage and services: S3-compatible storage, the embedded S3 and Kafka servers, retries, ports, memory."""
