"""Per-bucket metric extraction from the bounded log tails the gather brought back (spec §3): one
module per bucket (rl, sft, datagen, eval) whose docstring documents the line formats it reads, hang
(liveness evidence), config (the ``metrics:`` section of sweep.yaml), patterns (fast regex search)
and common (the Extracted record, number and metric-dict parsing).
"""
