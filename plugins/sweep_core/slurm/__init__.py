"""SLURM: the text formats the sweep asks squeue/sacct/scontrol for and their parsers, the ONE
batched gather script and its reader, how a remote script file (sweep_core/programs) becomes one
``bash -s`` text (remote_scripts), login-node failover, and the ClusterSnapshot a gather becomes.
"""
