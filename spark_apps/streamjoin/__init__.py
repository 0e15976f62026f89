"""streamjoin: streaming SQL joins (s-Server, Kinesis Analytics, SQLstream, RisingWave, Lenses)
on Spark Structured Streaming."""

__version__ = "0.1.0"
