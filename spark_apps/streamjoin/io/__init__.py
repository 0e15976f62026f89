"""Sources and sinks: files ingested as streams, staged for Spark."""
