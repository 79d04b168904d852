#!/usr/bin/env bash
# The main job: one full sweep on the bundled local clusters, printing the tables.
# Starts the real Slurm + two sshd login nodes and the real local iris controller (CoreWeave's
# scheduler; scripts/local_iris.sh says which one check its wrapper disables), submits a few example
# jobs to each (one failing, one with a log gone quiet), runs the monitor_cron_sweep DAG once
# (airflow dags test) over both, and prints the run log with the unified box tables.
# Usage: scripts/demo.sh    (as root on Debian 12)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/local_cluster.sh up
source scripts/env.sh
# shellcheck disable=SC1091
. "${SWEEP_CLUSTER_DIR:-/var/tmp/sweep-local-cluster}/cluster.env"
airflow connections import "$SWEEP_CLUSTER_DIR/connections.json" --overwrite >/dev/null
U=$SWEEP_CLUSTER_USER
L=/home/$U/jobs/logs
runuser -u "$U" -- scancel -u "$U" 2>/dev/null || true
sub() { runuser -u "$U" -- sbatch --parsable -t 30 -o "$L/%x-%j.out" "$@"; }
rl='for i in $(seq 1 900); do echo "Training Step Progress: $i/900"; echo "WANDB_MIRROR {\"trainer/global_step\": $i, \"trainer/max_steps\": 900, \"reward/mean\": 0.4$((i % 10)), \"actor/grad_norm\": 1.2, \"actor/entropy\": 0.6, \"tis/ratio_mean\": 1.01}"; sleep 2; done'
sft='echo "  Total optimization steps = 1,875"; for i in $(seq 1 900); do echo " $i/1875 [00:10<03:40, 2.7s/it]"; echo "{'"'"'loss'"'"': 0.6$((i % 10)), '"'"'grad_norm'"'"': 1.5, '"'"'epoch'"'"': 0.1}"; sleep 2; done'
dg='for i in $(seq 1 900); do echo "chunk: $((i * 4)) result.json, avg_turns=4.2, exceptions=$((i / 5))/$((i * 4))"; sleep 2; done'
dead='for i in $(seq 1 900); do echo "chunk: $((i * 4)) result.json, avg_turns=1.00, exceptions=0/$((i * 4))"; sleep 2; done'
ev='for i in $(seq 1 50); do echo "trial $i: AgentTimeoutError: agent exceeded 1800s"; echo "$i/50 trials, pass_rate=0.4$((i % 10))"; sleep 2; done; sleep 600'
sub -J rl__demo_grpo_qwen8b --wrap "$rl" >/dev/null
sub -J rl__demo_zclip_debug --wrap "$rl" >/dev/null
sub -J sft__demo_delphi_cell3 --wrap "$sft" >/dev/null
sub -J datagen__demo_minimax --array=1-3 -o "$L/%x-%A_%a.out" --wrap "$dg" >/dev/null
sub -J datagen__demo_glm_dead --wrap "$dead" >/dev/null
sub -J eval-demo_math500 --wrap "$ev" >/dev/null
sub -J pretokenize_demo --wrap 'sleep 1800' >/dev/null
sub -J sft__demo_broken --wrap 'echo "Traceback (most recent call last):"; echo "  File \"train.py\", line 3, in <module>"; echo "RuntimeError: CUDA error: device-side assert triggered"; exit 1' >/dev/null
wedged=$(sub -J rl__demo_wedged --wrap 'echo "Training Step Progress: 12/900"; sleep 1800')
for _ in $(seq 1 60); do
  [ "$(squeue -h -u "$U" -t RUNNING | wc -l)" -ge 10 ] && break; sleep 0.5
done
sleep 4
log=$(scontrol show job "$wedged" | sed -n 's/^ *StdOut=//p')
touch -d '2 hours ago' "$log"   # a job that holds its allocation but has gone quiet
# CoreWeave: the bundled local iris controller, with an ops.md of its own beside the Slurm one.
scripts/local_iris.sh up
IRIS_DIR=${SWEEP_IRIS_DIR:-/var/tmp/sweep-local-iris}
IRIS_URL=http://127.0.0.1:${SWEEP_IRIS_PORT:-22310}
HOME=$IRIS_DIR "$SWEEP_IRIS_PYTHON" scripts/demo_iris_jobs.py "$IRIS_URL" "$U"
# The lab's config (lab-config/): its local cluster (made user $U's) and sweep.yaml (the shipped one with
# the lab's values), never the shipped include/ alone.
LAB=$AIRFLOW_HOME/demo-lab
# on the login ports of the instance cluster.env describes (a scratch instance has its own)
SWEEP_LOGIN01_PORT=$SWEEP_LOGIN01_PORT SWEEP_LOGIN02_PORT=$SWEEP_LOGIN02_PORT \
  python lab-config/lab_config.py "$LAB" "$U" --lab-only >/dev/null
OPS=$LAB/ops
mkdir -p "$OPS/coreweave-local"
cat >"$OPS/coreweave-local/ops.md" <<EOF
---
name: coreweave-local
scheduler: iris
status: active
user: $U
controller_url: $IRIS_URL
iris_python: $SWEEP_IRIS_PYTHON
iris_home: $IRIS_DIR
iris_timeout_s: 30
quota:
  kind: none
---
The bundled local iris controller (scripts/local_iris.sh), standing in for CoreWeave: no pods
check (no Kubernetes here), so a 0-pod wedge cannot be seen in the demo.
EOF
export SWEEP_OPS_DIR=$OPS
export SWEEP_CONFIG=$LAB/sweep.yaml
export SWEEP_RUN_LOG_DIR=${SWEEP_RUN_LOG_DIR:-$AIRFLOW_HOME/agent_logs}
export SWEEP_OVERRUN_ALERT=off  # airflow dags test cannot run a DAG with a deadline= (Airflow 3.3.2)
out=$AIRFLOW_HOME/demo-dags-test.log
echo "[demo] airflow dags test monitor_cron_sweep (task logs: $out)"
rc=0
airflow dags test monitor_cron_sweep -c '{"clusters": ["local", "coreweave-local"], "lookback_hours": 1}' >"$out" 2>&1 || rc=$?
report=$(ls -t "$SWEEP_RUN_LOG_DIR"/*.md 2>/dev/null | head -n 1)
if [ -n "$report" ]; then
  echo "[demo] run log: $report"
  cat "$report"
fi
grep -E "DagRun Finished|state=" "$out" | grep -o "state=[a-z_]*" | tail -n 1 | sed 's/^/[demo] run /'
exit $rc
