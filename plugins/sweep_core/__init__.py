"""The sweep's core, pure Python (no Airflow): config/ (ops.md, sweep.yaml), slurm/ and iris/ (gather
and parse a cluster), health/ (quota, tree hygiene), fanin/ (buckets, liveness, metrics, tables,
history), rules/ (one module per flag-rule family, a registry), handoffs/{cleanup,cancel,harvest,chain}/
(the DAGs' plans and remote scripts); models, vocab, window and safe_text are shared by all.
"""
