"""rsep on Apache Spark: Structured Streaming jobs running the engine's queries."""
