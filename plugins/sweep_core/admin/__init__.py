"""The deployment's own commands: check-config (and its --connect), whether the scheduled DAGs are
paused, which hand-offs the config turns on for a cluster (switches, also the sweep's OFF lines),
and Airflow's db clean on a schedule."""
