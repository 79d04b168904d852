#!/usr/bin/env bash
# The bundled local cluster: a real two-node Slurm (munge, MariaDB, slurmdbd, slurmctld, one
# slurmd per node) behind two real sshd on 127.0.0.1 playing login01 and login02.
#
#   scripts/local_cluster.sh up      install (apt) if needed, start what is not running
#   scripts/local_cluster.sh down    stop only the processes this script started (by PID)
#   scripts/local_cluster.sh status  one line per daemon
#   scripts/local_cluster.sh stop-one NAME / start-one NAME   (tests: slurmctld, login01,
#       slurmd-node2 = one node's slurmd, slurmd = every node's)
#   scripts/local_cluster.sh gpu-stub  (re)install the STUB nvidia-smi only (also done by up)
#
# Idempotent and systemd-free. Must run as root. State lives under $SWEEP_CLUSTER_DIR.
#
# The nodes ("localhost" and "node2" by default; a scratch instance, below, runs a third, "node3";
# $SWEEP_SLURM_NODES sets them) are several slurmd on this
# one machine, each started as `slurmd -N NAME`: its own NodeName with its own Port= (node k
# listens on $SWEEP_SLURMD_PORT + k - 1: 6821, 6822), NodeAddr=127.0.0.1, its own spool dir, pid
# file and log through %n (SlurmdSpoolDir=.../slurmd/%n). Debian 12's slurm-wlm 22.05 is NOT built
# with --enable-multiple-slurmd, and it needs not be here: per-node Port= and %n in those paths
# work in this build (tried); what the option adds, chiefly a per-node cgroup prefix (/slurm_%n),
# matters to cgroup plugins only, and this cluster has none (proctrack/linuxproc, task/none).
# (Network namespaces, one slurmd per netns with a veth address, work here too but need
# CAP_NET_ADMIN and leave kernel state to clean up: not used.) One trap: while a node named
# "localhost" is the only node record, 22.05's node lookup returns it for ANY name, so a
# NodeName=localhost line written first makes the next one fatal ("Duplicated NodeHostName
# node2"). The lines are written last node first; Weight= keeps 1-node jobs on the first node
# (localhost, the name the tests and fixtures know) until it is full. A node fails when its slurmd
# stops (`stop-one slurmd-node2`): SlurmdTimeout=10 makes slurmctld mark it NOT_RESPONDING in ~15
# s and DOWN in ~30 s, its jobs end NODE_FAIL (or are requeued); its job steps' processes live on
# until its slurmd starts again and kills them. ReturnToService=2: back in service then.
#
# Every port and path is a parameter (defaults = the shared instance), so a second, scratch
# instance can run beside it: SWEEP_CLUSTER_DIR, SWEEP_SLURM_CONF_DIR (slurm.conf, slurmdbd.conf;
# clients need SLURM_CONF=<it>/slurm.conf, the login nodes' sshd set it), SWEEP_SLURMCTLD_PORT,
# SWEEP_SLURMD_PORT, SWEEP_SLURMDBD_PORT, SWEEP_DB_PORT, SWEEP_LOGIN01_PORT, SWEEP_LOGIN02_PORT,
# SWEEP_SLURM_CLUSTER, SWEEP_SLURM_FIRST_JOB_ID (job ids apart from the shared instance's), and
# SWEEP_SLURMD_TIMEOUT. `up` writes them all to $SWEEP_CLUSTER_DIR/cluster.env (`set -a;
# . cluster.env; set +a` before running tests against that instance). munged is shared: one that
# runs already is used, never started twice.
# SWEEP_CLUSTER_INSTANCE=K (K >= 1) moves every default at once to scratch instance K: its own dir
# (/var/tmp/sweep-local-cluster-scratchK), conf dir (/etc/slurm-scratchK), cluster name, user
# (sweepxK, no lane users), job ids (from K * 1000000) and ports (login 22201/22202 + 10K, MariaDB
# 33061 + K, slurmctld/slurmdbd/slurmd 6817/6819/6821 + 100K). scripts/test.sh runs the tests that
# stop daemons on such instances, beside the lanes on the shared one (instance 0, the default).
# A scratch instance has three nodes (localhost node2 node3): a 2-node job requeued with one of its
# nodes in ExcNodeList runs again, on 2 nodes, without it (tests/handoffs/relaunch/
# test_wedge_relaunch_e2e_local.py). `up` over a running instance whose node list changed restarts
# slurmctld and the slurmd (22.05 takes no new node without a restart).
set -euo pipefail

K=${SWEEP_CLUSTER_INSTANCE:-0}
[[ $K =~ ^[0-9]$ ]] || { echo "[local-cluster] ERROR: SWEEP_CLUSTER_INSTANCE must be 0-9, not '$K'" >&2; exit 2; }
if [ "$K" -gt 0 ]; then SCRATCH=-scratch$K; SCRATCH_USER=sweepx$K; else SCRATCH=; SCRATCH_USER=sweep; fi

DIR=${SWEEP_CLUSTER_DIR:-/var/tmp/sweep-local-cluster$SCRATCH}
USER_NAME=${SWEEP_CLUSTER_USER:-$SCRATCH_USER}
# The lane users: the test suite's parallel cluster lanes each sweep as their own Slurm user
# (tests/lab.py: lane k = sweep, sweep2, sweep3, …), so one lane's sweeps never see another's jobs.
if [ "$K" -gt 0 ]; then LANES_DEFAULT=; else LANES_DEFAULT="sweep2 sweep3"; fi
read -r -a LANE_USERS <<<"${SWEEP_CLUSTER_LANE_USERS-$LANES_DEFAULT}"
LOGIN01_PORT=${SWEEP_LOGIN01_PORT:-$((22201 + 10 * K))}
LOGIN02_PORT=${SWEEP_LOGIN02_PORT:-$((22202 + 10 * K))}
DB_PORT=${SWEEP_DB_PORT:-$((33061 + K))}
CLUSTER=${SWEEP_SLURM_CLUSTER:-sweeplocal${SCRATCH#-}}
CPUS=${SWEEP_SLURM_CPUS:-256}  # per node
if [ "$K" -gt 0 ]; then NODES_DEFAULT="localhost node2 node3"; else NODES_DEFAULT="localhost node2"; fi
read -r -a NODES <<<"${SWEEP_SLURM_NODES:-$NODES_DEFAULT}"
CONF_DIR=${SWEEP_SLURM_CONF_DIR:-/etc/slurm$SCRATCH}
CTLD_PORT=${SWEEP_SLURMCTLD_PORT:-$((6817 + 100 * K))}
SLURMD_PORT=${SWEEP_SLURMD_PORT:-$((6821 + 100 * K))}
DBD_PORT=${SWEEP_SLURMDBD_PORT:-$((6819 + 100 * K))}
SLURMD_TIMEOUT=${SWEEP_SLURMD_TIMEOUT:-10}
if [ "$K" -gt 0 ]; then FIRST_DEFAULT=$((K * 1000000)); else FIRST_DEFAULT=; fi
FIRST_JOB_ID=${SWEEP_SLURM_FIRST_JOB_ID:-$FIRST_DEFAULT}
RUN=$DIR/run
LOG=$DIR/log
PIDS=$RUN/slurm  # the Slurm daemons' own pid files (copied to $RUN/NAME.pid once written)
export SLURM_CONF=$CONF_DIR/slurm.conf  # this script's daemons and commands: this instance

say() { printf '[local-cluster] %s\n' "$*"; }
die() { printf '[local-cluster] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it starts system daemons)"

comm_of() { # the process name a daemon's PID must have (a stale PID file may point elsewhere)
  case $1 in login0*) echo sshd ;; mariadb) echo mariadbd ;; slurmd-*) echo slurmd ;; *) echo "$1" ;; esac
}

alive() { # alive NAME -> 0 if the recorded PID runs and is that daemon
  local f=$RUN/$1.pid pid
  [ -s "$f" ] || return 1
  pid=$(cat "$f")
  kill -0 "$pid" 2>/dev/null && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$(comm_of "$1")" ]
}

wait_for() { # wait_for SECONDS DESCRIPTION CMD...
  local secs=$1 what=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || die "timed out after ${secs}s waiting for $what"
    sleep 0.5
  done
}

install_packages() {
  local missing=()
  command -v slurmctld >/dev/null || missing+=(slurm-wlm)
  command -v slurmdbd >/dev/null || missing+=(slurmdbd)
  command -v mariadbd >/dev/null || missing+=(mariadb-server)
  command -v munged >/dev/null || missing+=(munge)
  [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
  command -v ssh-keygen >/dev/null || missing+=(openssh-client)
  command -v runuser >/dev/null || missing+=(util-linux)
  command -v git >/dev/null || missing+=(git)
  if ((${#missing[@]})); then
    say "installing ${missing[*]} (apt)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >"$LOG/apt.log" 2>&1 \
      || { tail -n 30 "$LOG/apt.log" >&2; die "apt-get install failed"; }
  fi
}

make_user() { # make_user NAME
  local name=$1
  if ! id "$name" >/dev/null 2>&1; then
    useradd -m -s /bin/bash "$name"
  fi
  # '*' = no password, but not "locked": sshd with UsePAM=no refuses locked accounts.
  usermod -p '*' "$name"
  local home; home=$(getent passwd "$name" | cut -d: -f6)
  install -d -m 700 -o "$name" -g "$name" "$home/.ssh"
  # What the lab's ops.md names (lab-config/ops/local): the artifact root the quota check reads and
  # the cluster clone tree_hygiene reads (a clean clone of a local origin): present, so a sweep of a
  # fresh cluster warns about nothing of its own config.
  install -d -m 755 -o "$name" -g "$name" "$home/jobs" "$home/jobs/logs" "$home/jobs/artifacts"
  if [ ! -e "$home/repo" ]; then
    local g=(runuser -u "$name" -- git -c user.email=lab@localhost -c user.name=lab)
    rm -rf "$home/origin.git" "$home/seed"
    "${g[@]}" init -q --bare -b main "$home/origin.git"
    "${g[@]}" clone -q "$home/origin.git" "$home/seed" 2>/dev/null
    echo "the lab cluster's clone (scripts/local_cluster.sh)" >"$home/seed/README"
    chown "$name:$name" "$home/seed/README"
    "${g[@]}" -C "$home/seed" add README
    "${g[@]}" -C "$home/seed" commit -qm seed
    "${g[@]}" -C "$home/seed" push -q origin main
    "${g[@]}" clone -q "$home/origin.git" "$home/repo"
    rm -rf "$home/seed"
  fi
  if [ ! -s "$DIR/ssh/id_ed25519" ]; then
    install -d -m 700 "$DIR/ssh"
    ssh-keygen -q -t ed25519 -N '' -C sweep-local-cluster -f "$DIR/ssh/id_ed25519"
  fi
  # Add this instance's key (another instance's key, if any, stays).
  local keys=$home/.ssh/authorized_keys
  touch "$keys"
  grep -qxF "$(cat "$DIR/ssh/id_ed25519.pub")" "$keys" || cat "$DIR/ssh/id_ed25519.pub" >>"$keys"
  chown "$name:$name" "$keys"
  chmod 600 "$keys"
}

node_lines() { # one NodeName line per node, the first node last (see the header): NODES[k]
  # listens on SLURMD_PORT + k and weighs k + 1, so 1-node jobs go to the first node first.
  local mem=$1 k
  for ((k = ${#NODES[@]} - 1; k >= 0; k--)); do
    echo "NodeName=${NODES[k]} NodeAddr=127.0.0.1 Port=$((SLURMD_PORT + k)) Weight=$((k + 1)) CPUs=$CPUS RealMemory=$mem State=UNKNOWN"
  done
}

write_configs() {
  local mem nodelist
  install -d -m 755 "$CONF_DIR" "$RUN" "$LOG"
  install -d -m 755 -o slurm -g slurm "$PIDS" "$DIR/slurmctld" "$DIR/slurmd" "$LOG/slurm"
  mem=$(awk '/MemTotal/ {print int($2/1024/2)}' /proc/meminfo)
  nodelist=$(IFS=,; echo "${NODES[*]}")
  cat >"$CONF_DIR/slurm.conf" <<EOF
# Written by monitor-cron-sweep scripts/local_cluster.sh: the bundled test cluster, ${#NODES[@]} nodes
# on one machine (one slurmd each: own Port=, spool, pid file and log through %n).
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=$PIDS/slurmctld.pid
SlurmdPidFile=$PIDS/slurmd-%n.pid
SlurmctldPort=$CTLD_PORT
StateSaveLocation=$DIR/slurmctld
SlurmdSpoolDir=$DIR/slurmd/%n
SlurmctldLogFile=$LOG/slurm/slurmctld.log
SlurmdLogFile=$LOG/slurm/slurmd-%n.log
# A node whose slurmd stops is NOT_RESPONDING in ~15 s and DOWN in ~30 s (default 300 s: minutes).
SlurmdTimeout=$SLURMD_TIMEOUT
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# More CPUs than the machine has, so that many sleeping test jobs run at once.
SlurmdParameters=config_overrides
MinJobAge=300
MailProg=/bin/true
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
MaxJobCount=20000
${FIRST_JOB_ID:+FirstJobId=$FIRST_JOB_ID}
$(node_lines "$mem")
PartitionName=debug Nodes=$nodelist Default=YES MaxTime=INFINITE State=UP
EOF
  if [ ! -s "$DIR/db.pass" ]; then
    head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$DIR/db.pass"
    chmod 600 "$DIR/db.pass"
  fi
  # slurmdbd reads the slurmdbd.conf beside $SLURM_CONF.
  cat >"$CONF_DIR/slurmdbd.conf" <<EOF
# Written by monitor-cron-sweep scripts/local_cluster.sh
AuthType=auth/munge
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=slurm
PidFile=$PIDS/slurmdbd.pid
LogFile=$LOG/slurm/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$(cat "$DIR/db.pass")
StorageLoc=slurm_acct_db
EOF
  chown slurm:slurm "$CONF_DIR/slurmdbd.conf"
  chmod 600 "$CONF_DIR/slurmdbd.conf"
}

system_munged() { # the PID of a munged that runs from /run/munge (started here or not), else 1
  local pid
  pid=$(cat /run/munge/munged.pid 2>/dev/null || true)
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = munged ] && echo "$pid"
}

start_munge() {
  alive munged && return 0
  if system_munged >/dev/null; then  # a second munged --force would take its socket over
    say "munged pid $(system_munged) runs already (not started here): using it"; return 0
  fi
  install -d -m 755 -o munge -g munge /run/munge /var/lib/munge /var/log/munge
  [ -s /etc/munge/munge.key ] || { mungekey --create --keyfile=/etc/munge/munge.key; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
  runuser -u munge -- /usr/sbin/munged --force --pid-file=/run/munge/munged.pid
  wait_for 10 munged test -s /run/munge/munged.pid
  cp /run/munge/munged.pid "$RUN/munged.pid"
  say "munged pid $(cat "$RUN/munged.pid")"
}

start_mariadb() {
  alive mariadb && return 0
  local data=$DIR/mysql
  if [ ! -d "$data/mysql" ]; then
    install -d -m 750 -o mysql -g mysql "$data"
    mariadb-install-db --user=mysql --datadir="$data" --auth-root-authentication-method=socket \
      >"$LOG/mariadb-install.log" 2>&1 || { tail "$LOG/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
  fi
  install -d -m 755 -o mysql -g mysql "$DIR/mysqld-run"
  /usr/sbin/mariadbd --user=mysql --datadir="$data" --port="$DB_PORT" --bind-address=127.0.0.1 \
    --socket="$DIR/mysqld-run/mysqld.sock" --pid-file="$DIR/mysqld-run/mysqld.pid" \
    --innodb-buffer-pool-size=1024M --innodb-lock-wait-timeout=900 \
    --log-error="$LOG/mariadb.log" >/dev/null 2>&1 &
  echo $! >"$RUN/mariadb.pid"
  wait_for 60 mariadb mariadb --socket="$DIR/mysqld-run/mysqld.sock" -e 'select 1'
  mariadb --socket="$DIR/mysqld-run/mysqld.sock" <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$(cat "$DIR/db.pass")';
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$(cat "$DIR/db.pass")';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$(cat "$DIR/db.pass")';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$(cat "$DIR/db.pass")';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
FLUSH PRIVILEGES;
EOF
  say "mariadb pid $(cat "$RUN/mariadb.pid") on 127.0.0.1:$DB_PORT"
}

start_slurmdbd() {
  alive slurmdbd && return 0
  rm -f "$PIDS/slurmdbd.pid"
  /usr/sbin/slurmdbd
  wait_for 30 slurmdbd test -s "$PIDS/slurmdbd.pid"
  cp "$PIDS/slurmdbd.pid" "$RUN/slurmdbd.pid"
  wait_for 60 "slurmdbd answering" sacctmgr -n list cluster
  if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
  fi
  say "slurmdbd pid $(cat "$RUN/slurmdbd.pid")"
}

node_up() { # node_up NODE: 0 if slurmctld sees the node responding (idle, mixed or allocated)
  sinfo -h -n "$1" -o %t | grep -Eq '^(idle|mix|alloc)$'
}

start_slurmctld() {
  local node
  alive slurmctld && return 0
  rm -f "$PIDS/slurmctld.pid"
  /usr/sbin/slurmctld
  wait_for 30 slurmctld test -s "$PIDS/slurmctld.pid"
  cp "$PIDS/slurmctld.pid" "$RUN/slurmctld.pid"
  wait_for 60 "slurmctld answering" squeue -h
  for node in "${NODES[@]}"; do
    if alive "slurmd-$node"; then
      # A restarted controller holds jobs as "nodes DOWN" until slurmd re-registers: nudge it.
      kill -HUP "$(cat "$RUN/slurmd-$node.pid")" 2>/dev/null || true
      wait_for 60 "node $node responding" node_up "$node"
    fi
  done
  say "slurmctld pid $(cat "$RUN/slurmctld.pid")"
}

start_slurmd() { # start_slurmd NODE: this node's slurmd (its Port=, spool, pid file from slurm.conf)
  local node=$1
  alive "slurmd-$node" && return 0
  rm -f "$PIDS/slurmd-$node.pid"
  /usr/sbin/slurmd -N "$node"
  wait_for 30 "slurmd $node" test -s "$PIDS/slurmd-$node.pid"
  cp "$PIDS/slurmd-$node.pid" "$RUN/slurmd-$node.pid"
  # Resume the node if an earlier stop left it down/drained.
  scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
  wait_for 60 "node $node idle" node_up "$node"
  say "slurmd $node pid $(cat "$RUN/slurmd-$node.pid")"
}

start_sshd() { # start_sshd NAME PORT
  local name=$1 port=$2
  alive "$name" && return 0
  install -d -m 755 /run/sshd
  ssh-keygen -A >/dev/null
  /usr/sbin/sshd -p "$port" -o ListenAddress=127.0.0.1 -o PidFile="$RUN/$name.pid" \
    -o UsePAM=no -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no \
    -o PubkeyAuthentication=yes -o PermitRootLogin=no -o AllowUsers="$USER_NAME ${LANE_USERS[*]}" \
    -o LogLevel=INFO -o MaxStartups=100:30:200 -o MaxSessions=50 -o SetEnv="SLURM_CONF=$SLURM_CONF" \
    -E "$LOG/sshd-$name.log"
  wait_for 10 "sshd $name" test -s "$RUN/$name.pid"
  # A stale entry for this port in root's known_hosts (from an earlier install's host keys)
  # would override the Connection's host_key in paramiko: drop it.
  ssh-keygen -R "[127.0.0.1]:$port" >/dev/null 2>&1 || true
  say "sshd $name pid $(cat "$RUN/$name.pid") on 127.0.0.1:$port"
}

write_connections() {
  # Airflow Connections for the two login nodes (airflow connections import FILE).
  local hostkey; hostkey=$(cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub)
  python3 - "$DIR/connections.json" "$USER_NAME" "$DIR/ssh/id_ed25519" "$hostkey" "$LOGIN01_PORT" <<'EOF'
import json, sys
out, user, key, hostkey, port = sys.argv[1:]
conn = {"conn_type": "ssh", "host": "127.0.0.1", "port": int(port), "login": user,
        "extra": json.dumps({"key_file": key, "host_key": hostkey, "look_for_keys": "false"})}
json.dump({"ssh_local": conn}, open(out, "w"), indent=2)
EOF
  cat >"$DIR/cluster.env" <<EOF
SWEEP_CLUSTER_INSTANCE=$K
SWEEP_CLUSTER_DIR=$DIR
SWEEP_CLUSTER_USER=$USER_NAME
SWEEP_LOGIN01_PORT=$LOGIN01_PORT
SWEEP_LOGIN02_PORT=$LOGIN02_PORT
SWEEP_DB_PORT=$DB_PORT
SWEEP_SLURM_CLUSTER=$CLUSTER
SWEEP_SLURM_CPUS=$CPUS
SWEEP_SLURM_NODES="${NODES[*]}"
SWEEP_SLURM_CONF_DIR=$CONF_DIR
SWEEP_SLURMCTLD_PORT=$CTLD_PORT
SWEEP_SLURMD_PORT=$SLURMD_PORT
SWEEP_SLURMDBD_PORT=$DBD_PORT
SWEEP_SLURMD_TIMEOUT=$SLURMD_TIMEOUT
SWEEP_SLURM_FIRST_JOB_ID=$FIRST_JOB_ID
SLURM_CONF=$SLURM_CONF
EOF
}

# The node has no GPU: a STUB nvidia-smi (scripts/gpu_stub/nvidia-smi, NOT NVIDIA's program)
# prints recorded real nvidia-smi output per job, so the sweep's real `srun --overlap
# nvidia-smi` GPU probe can be tested. A test picks a job's profile by writing its name to
# $GPU_STUB_JOBS/<job id> (profiles: scripts/gpu_stub/profiles/README). Idempotent.
GPU_STUB_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/gpu_stub
GPU_STUB_JOBS=/var/lib/sweep-gpu-stub/jobs
install_gpu_stub() {
  if [ -e /usr/local/bin/nvidia-smi ] && ! grep -q "STUB nvidia-smi" /usr/local/bin/nvidia-smi; then
    say "a real /usr/local/bin/nvidia-smi is there: stub not installed"; return 0
  fi
  install -d -m 755 /usr/local/share/sweep-gpu-stub/profiles "$GPU_STUB_JOBS"
  local f
  for f in "$GPU_STUB_SRC"/profiles/*; do  # unchanged files stay: a running probe never sees none
    cmp -s "$f" "/usr/local/share/sweep-gpu-stub/profiles/${f##*/}" \
      || install -m 644 "$f" /usr/local/share/sweep-gpu-stub/profiles/
  done
  cmp -s "$GPU_STUB_SRC/nvidia-smi" /usr/local/bin/nvidia-smi \
    || install -m 755 "$GPU_STUB_SRC/nvidia-smi" /usr/local/bin/nvidia-smi
}

restart_if_nodes_changed() { # a running instance whose slurm.conf names other nodes: stop its Slurm daemons
  local was want node
  was=$(sed -n 's/^PartitionName=debug Nodes=\([^ ]*\) .*/\1/p' "$CONF_DIR/slurm.conf" 2>/dev/null || true)
  want=$(IFS=,; echo "${NODES[*]}")
  [ -n "$was" ] && [ "$was" != "$want" ] || return 0
  say "nodes changed ($was -> $want): restarting slurmctld and the slurmd"
  for node in ${was//,/ }; do stop_one "slurmd-$node"; done
  stop_one slurmctld
}

up() {
  install -d -m 755 "$DIR" "$RUN" "$LOG"
  restart_if_nodes_changed
  install_gpu_stub
  install_packages
  local u
  for u in "$USER_NAME" "${LANE_USERS[@]}"; do make_user "$u"; done
  write_configs
  start_munge
  start_mariadb
  start_slurmdbd
  start_slurmctld
  for node in "${NODES[@]}"; do start_slurmd "$node"; done
  start_sshd login01 "$LOGIN01_PORT"
  start_sshd login02 "$LOGIN02_PORT"
  write_connections
  say "up: cluster $CLUSTER, nodes ${NODES[*]}, user $USER_NAME, login01 127.0.0.1:$LOGIN01_PORT, login02 127.0.0.1:$LOGIN02_PORT"
}

stop_one() { # stop_one NAME: end the recorded PID, wait for it
  local name=$1 f=$RUN/$1.pid pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  if alive "$name"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
  say "stopped $name ($pid)"
}

slurmd_names() { # every node's slurmd, and "slurmd" (the one slurmd an older version started)
  local node
  for node in "${NODES[@]}"; do echo "slurmd-$node"; done
  echo slurmd
}

down() {
  for name in login02 login01 $(slurmd_names) slurmctld slurmdbd mariadb munged; do stop_one "$name"; done
}

status() {
  for name in munged mariadb slurmdbd slurmctld $(slurmd_names | grep -vx slurmd) login01 login02; do
    if alive "$name"; then echo "$name running pid $(cat "$RUN/$name.pid")"
    elif [ "$name" = munged ] && system_munged >/dev/null; then echo "munged running pid $(system_munged) (not started here)"
    else echo "$name stopped"; fi
  done
}

is_node() { local node; for node in "${NODES[@]}"; do [ "$node" = "$1" ] && return 0; done; return 1; }

stop_named() { # stop_named NAME: a daemon; "slurmd" = every node's slurmd
  local name
  case $1 in
    slurmd) for name in $(slurmd_names); do stop_one "$name"; done ;;
    slurmd-*) is_node "${1#slurmd-}" || die "no node ${1#slurmd-} (nodes: ${NODES[*]})"; stop_one "$1" ;;
    *) stop_one "$1" ;;
  esac
}

start_one() {
  local node
  case $1 in
    munged) start_munge ;; mariadb) start_mariadb ;; slurmdbd) start_slurmdbd ;;
    slurmctld) start_slurmctld ;;
    slurmd) for node in "${NODES[@]}"; do start_slurmd "$node"; done ;;
    slurmd-*) is_node "${1#slurmd-}" || die "no node ${1#slurmd-} (nodes: ${NODES[*]})"; start_slurmd "${1#slurmd-}" ;;
    login01) start_sshd login01 "$LOGIN01_PORT" ;; login02) start_sshd login02 "$LOGIN02_PORT" ;;
    *) die "unknown daemon $1" ;;
  esac
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  stop-one) stop_named "${2:?name}" ;;
  start-one) install -d "$RUN" "$LOG"; start_one "${2:?name}" ;;
  gpu-stub) install_gpu_stub ;;
  *) echo "usage: $0 up|down|status|stop-one NAME|start-one NAME|gpu-stub" >&2; exit 2 ;;
esac
