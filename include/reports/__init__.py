"""Reports published from an app's validated output, one module per app (no Airflow, no Spark)."""
