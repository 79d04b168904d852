#!/usr/bin/env bash
# The bundled local cluster: a real single-node Slurm (munge, MariaDB, slurmdbd, slurmctld,
# slurmd) behind two real sshd on 127.0.0.1 playing login01 and login02.
#
#   scripts/local_cluster.sh up      install (apt) if needed, start what is not running
#   scripts/local_cluster.sh down    stop only the processes this script started (by PID)
#   scripts/local_cluster.sh status  one line per daemon
#   scripts/local_cluster.sh stop-one NAME / start-one NAME   (tests: slurmctld, login01, ...)
#   scripts/local_cluster.sh gpu-stub  (re)install the STUB nvidia-smi only (also done by up)
#
# Idempotent and systemd-free. Must run as root. State lives under $SWEEP_CLUSTER_DIR.
set -euo pipefail

DIR=${SWEEP_CLUSTER_DIR:-/var/tmp/sweep-local-cluster}
USER_NAME=${SWEEP_CLUSTER_USER:-sweep}
LOGIN01_PORT=${SWEEP_LOGIN01_PORT:-22201}
LOGIN02_PORT=${SWEEP_LOGIN02_PORT:-22202}
DB_PORT=${SWEEP_DB_PORT:-33061}
CLUSTER=${SWEEP_SLURM_CLUSTER:-sweeplocal}
CPUS=${SWEEP_SLURM_CPUS:-256}
RUN=$DIR/run
LOG=$DIR/log

say() { printf '[local-cluster] %s\n' "$*"; }
die() { printf '[local-cluster] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it starts system daemons)"

comm_of() { # the process name a daemon's PID must have (a stale PID file may point elsewhere)
  case $1 in login0*) echo sshd ;; mariadb) echo mariadbd ;; *) echo "$1" ;; esac
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
  if ((${#missing[@]})); then
    say "installing ${missing[*]} (apt)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >"$LOG/apt.log" 2>&1 \
      || { tail -n 30 "$LOG/apt.log" >&2; die "apt-get install failed"; }
  fi
}

make_user() {
  if ! id "$USER_NAME" >/dev/null 2>&1; then
    useradd -m -s /bin/bash "$USER_NAME"
  fi
  # '*' = no password, but not "locked": sshd with UsePAM=no refuses locked accounts.
  usermod -p '*' "$USER_NAME"
  local home; home=$(getent passwd "$USER_NAME" | cut -d: -f6)
  install -d -m 700 -o "$USER_NAME" -g "$USER_NAME" "$home/.ssh"
  install -d -m 755 -o "$USER_NAME" -g "$USER_NAME" "$home/jobs" "$home/jobs/logs"
  if [ ! -s "$DIR/ssh/id_ed25519" ]; then
    install -d -m 700 "$DIR/ssh"
    ssh-keygen -q -t ed25519 -N '' -C sweep-local-cluster -f "$DIR/ssh/id_ed25519"
  fi
  install -m 600 -o "$USER_NAME" -g "$USER_NAME" "$DIR/ssh/id_ed25519.pub" "$home/.ssh/authorized_keys"
}

write_configs() {
  local slurmuid cpus mem
  install -d -m 755 /etc/slurm "$RUN" "$LOG"
  install -d -m 755 -o slurm -g slurm /run/slurm "$DIR/slurmctld" "$DIR/slurmd" "$LOG/slurm"
  mem=$(awk '/MemTotal/ {print int($2/1024/2)}' /proc/meminfo)
  cat >/etc/slurm/slurm.conf <<EOF
# Written by monitor-cron-sweep scripts/local_cluster.sh: the bundled single-node test cluster.
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$DIR/slurmctld
SlurmdSpoolDir=$DIR/slurmd
SlurmctldLogFile=$LOG/slurm/slurmctld.log
SlurmdLogFile=$LOG/slurm/slurmd.log
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
MaxJobCount=20000
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  if [ ! -s "$DIR/db.pass" ]; then
    head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$DIR/db.pass"
    chmod 600 "$DIR/db.pass"
  fi
  cat >/etc/slurm/slurmdbd.conf <<EOF
# Written by monitor-cron-sweep scripts/local_cluster.sh
AuthType=auth/munge
DbdHost=localhost
SlurmUser=slurm
PidFile=/run/slurm/slurmdbd.pid
LogFile=$LOG/slurm/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$(cat "$DIR/db.pass")
StorageLoc=slurm_acct_db
EOF
  chown slurm:slurm /etc/slurm/slurmdbd.conf
  chmod 600 /etc/slurm/slurmdbd.conf
}

start_munge() {
  alive munged && return 0
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
  rm -f /run/slurm/slurmdbd.pid
  /usr/sbin/slurmdbd
  wait_for 30 slurmdbd test -s /run/slurm/slurmdbd.pid
  cp /run/slurm/slurmdbd.pid "$RUN/slurmdbd.pid"
  wait_for 60 "slurmdbd answering" sacctmgr -n list cluster
  if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
  fi
  say "slurmdbd pid $(cat "$RUN/slurmdbd.pid")"
}

start_slurmctld() {
  alive slurmctld && return 0
  rm -f /run/slurm/slurmctld.pid
  /usr/sbin/slurmctld
  wait_for 30 slurmctld test -s /run/slurm/slurmctld.pid
  cp /run/slurm/slurmctld.pid "$RUN/slurmctld.pid"
  wait_for 60 "slurmctld answering" squeue -h
  if alive slurmd; then
    # A restarted controller holds jobs as "nodes DOWN" until slurmd re-registers: nudge it.
    kill -HUP "$(cat "$RUN/slurmd.pid")" 2>/dev/null || true
    wait_for 60 "node responding" bash -c "sinfo -h -n localhost -o %t | grep -Eq '^(idle|mix|alloc)$'"
  fi
  say "slurmctld pid $(cat "$RUN/slurmctld.pid")"
}

start_slurmd() {
  alive slurmd && return 0
  rm -f /run/slurm/slurmd.pid
  /usr/sbin/slurmd -N localhost
  wait_for 30 slurmd test -s /run/slurm/slurmd.pid
  cp /run/slurm/slurmd.pid "$RUN/slurmd.pid"
  # Resume the node if an earlier stop left it down/drained.
  scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true
  wait_for 60 "node idle" bash -c "sinfo -h -n localhost -o %t | grep -Eq '^(idle|mix|alloc)'"
  say "slurmd pid $(cat "$RUN/slurmd.pid")"
}

start_sshd() { # start_sshd NAME PORT
  local name=$1 port=$2
  alive "$name" && return 0
  install -d -m 755 /run/sshd
  ssh-keygen -A >/dev/null
  /usr/sbin/sshd -p "$port" -o ListenAddress=127.0.0.1 -o PidFile="$RUN/$name.pid" \
    -o UsePAM=no -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no \
    -o PubkeyAuthentication=yes -o PermitRootLogin=no -o AllowUsers="$USER_NAME" \
    -o LogLevel=INFO -o MaxStartups=100:30:200 -o MaxSessions=50 -E "$LOG/sshd-$name.log"
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
SWEEP_CLUSTER_DIR=$DIR
SWEEP_CLUSTER_USER=$USER_NAME
SWEEP_LOGIN01_PORT=$LOGIN01_PORT
SWEEP_LOGIN02_PORT=$LOGIN02_PORT
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
  install -m 644 "$GPU_STUB_SRC"/profiles/* /usr/local/share/sweep-gpu-stub/profiles/
  install -m 755 "$GPU_STUB_SRC/nvidia-smi" /usr/local/bin/nvidia-smi
}

up() {
  install -d -m 755 "$DIR" "$RUN" "$LOG"
  install_gpu_stub
  install_packages
  make_user
  write_configs
  start_munge
  start_mariadb
  start_slurmdbd
  start_slurmctld
  start_slurmd
  start_sshd login01 "$LOGIN01_PORT"
  start_sshd login02 "$LOGIN02_PORT"
  write_connections
  say "up: cluster $CLUSTER, user $USER_NAME, login01 127.0.0.1:$LOGIN01_PORT, login02 127.0.0.1:$LOGIN02_PORT"
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

down() {
  for name in login02 login01 slurmd slurmctld slurmdbd mariadb munged; do stop_one "$name"; done
}

status() {
  for name in munged mariadb slurmdbd slurmctld slurmd login01 login02; do
    if alive "$name"; then echo "$name running pid $(cat "$RUN/$name.pid")"; else echo "$name stopped"; fi
  done
}

start_one() {
  case $1 in
    munged) start_munge ;; mariadb) start_mariadb ;; slurmdbd) start_slurmdbd ;;
    slurmctld) start_slurmctld ;; slurmd) start_slurmd ;;
    login01) start_sshd login01 "$LOGIN01_PORT" ;; login02) start_sshd login02 "$LOGIN02_PORT" ;;
    *) die "unknown daemon $1" ;;
  esac
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  stop-one) stop_one "${2:?name}" ;;
  start-one) install -d "$RUN" "$LOG"; start_one "${2:?name}" ;;
  gpu-stub) install_gpu_stub ;;
  *) echo "usage: $0 up|down|status|stop-one NAME|start-one NAME|gpu-stub" >&2; exit 2 ;;
esac
