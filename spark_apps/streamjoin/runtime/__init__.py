"""Running a plan: Spark session, run loop, ordering, output, status."""
