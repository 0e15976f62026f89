"""What the DAGs' tasks call: Airflow-free steps, each tested without Airflow."""
