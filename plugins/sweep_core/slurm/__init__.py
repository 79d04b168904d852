"""SLURM: the text formats the sweep asks squeue/sacct/scontrol for and their parsers, the ONE
batched gather script and its reader, login-node failover, and the validated ClusterSnapshot a
gather becomes.
"""
