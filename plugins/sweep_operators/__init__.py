"""Airflow operators of the sweep: thin wrappers around sweep_core."""
