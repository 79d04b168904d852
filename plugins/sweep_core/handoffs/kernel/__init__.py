"""The hand-off kernel: one act type (act), one attempt record and a target's record of them
(attempt), one typed result (result), a hub check as an act with its result (hub). The batch-job
machine (handoffs.batch_job: claim, submit, settle exactly once) and the I/O object
(handoffs.ports) are its other two parts: kernel.machine names them. Import the parts from their
modules (``sweep_core.handoffs.kernel.result`` …)."""
