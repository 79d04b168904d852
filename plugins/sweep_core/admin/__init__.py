"""The deployment's own commands: check-config (and its --connect), whether the scheduled DAGs are
paused, and Airflow's db clean on a schedule."""
