"""The fan-in of one sweep, cluster snapshots in, tables and run log out: bucketing, liveness,
per-bucket metrics from the log tails, launch fingerprints, per-job isolation, box tables, the
dated run log and the sweep-to-sweep history.
"""
