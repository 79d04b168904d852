"""GPU utilisation of RUNNING jobs (issue 15 §1): the nvidia-smi reading a probe brings back and
its per-job summary. Pure core: the sweep's gather and (later) the RL deep-dive both read it."""
