"""The SLURM gather's cost on the login node and the controller, today's batched script against the
pre-issue-12 one (tests/slurm/gather_reference.py) and a minimal batch script, in ONE run on the
bundled cluster: N RUNNING jobs (+N/5 ended in the window) per size. Prints a table (not a timed
test): gather wall (median), login-node CPU, processes started (strace -f), slurmctld RPCs by
user (sdiag -r, then sdiag), SSH sessions; then what one `scontrol show job -o` costs against
`squeue -u -O` with other users' jobs on the cluster (the choice of the StdOut listing).

Holds the cluster: run ONLY under the lock, it cancels every job of user sweep:
    source scripts/env.sh && flock /tmp/sweep-cluster.lock python benchmarks/gather.py [10,200,1000]
Sizes over the node's CPUs share them (partition OverSubscribe=FORCE), restored after.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins"), str(ROOT / "tests" / "slurm")]

from gather_reference import CLUSTER_DIR, old_gather_script, run_on_login01  # noqa: E402

from sweep_core.slurm.gather import GatherRequest, build_gather_script, parse_gather_output  # noqa: E402

USER = "sweep"
LOGS = Path(f"/home/{USER}/jobs/logs")
CONF = Path("/etc/slurm/slurm.conf")
STATIC = "echo 'Training Step Progress: 3/600'; exec sleep 3000"
# The least a gather can do in batch: the same three listings, every job's StdOut from ONE
# scontrol, every stat and tail in ONE python3, records base64'd there (no guards, no chains).
MINIMAL = r"""M=@@SWEEP-minimal@@
squeue -u sweep -t RUNNING,SUSPENDED -o '%i|%A|%T|%M|%l|%D|%P|%R|%j' >/tmp/sweep-min-sq.$$
squeue -u sweep -t PENDING -o '%i|%T|%j' >/dev/null
sacct -u sweep -S "$S" -E "$E" -X -P -o JobID,JobIDRaw,State,JobName >/dev/null
scontrol show job -o | python3 -c '
import base64, os, sys
for line in sys.stdin:
    p = line.split(" StdOut=", 1)[-1].split(" ", 1)[0] if " StdOut=" in line else ""
    try:
        st = os.stat(p); f = open(p, "rb"); f.seek(max(0, st.st_size - 16384)); t = f.read(16384)
        print("@@M", p, st.st_mtime, base64.b64encode(t).decode())
    except OSError:
        pass
'
rm -f /tmp/sweep-min-sq.$$
"""


def sh(*args: str, check: bool = True) -> str:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=600).stdout


def as_sweep(script: str) -> str:
    return sh("runuser", "-u", USER, "--", "bash", "-c", script)


def count(*args: str) -> int:
    return len(sh(*args, check=False).splitlines())


def wait_until(what: str, test, timeout: float = 600) -> None:
    end = time.time() + timeout
    while not test():
        if time.time() > end:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(2)


def cancel_all() -> None:
    sh("scancel", "-u", USER, check=False)
    wait_until("no jobs", lambda: count("squeue", "-h", "-u", USER) == 0)


def node_cpus() -> int:
    return int(sh("sinfo", "-h", "-o", "%c").split()[0])


def make_room(n: int) -> None:
    """Room for n jobs at once: the partition shares each CPU (OverSubscribe=FORCE:k; 22.05's
    scontrol reconfigure refuses a changed CPU count of a node, that needs a daemon restart)."""
    share = -(-n // node_cpus())
    sh("scontrol", "update", "PartitionName=debug", f"OverSubscribe=FORCE:{share}")
    print(f"(partition debug OverSubscribe=FORCE:{share} for this size)", flush=True)


def restore(conf: str, cpus: int) -> None:
    """The cluster's default config back: slurm.conf as it was, the partition not shared."""
    if CONF.read_text() != conf or node_cpus() != cpus:
        CONF.write_text(conf)
        sh("scontrol", "reconfigure")
    sh("scontrol", "update", "PartitionName=debug", "OverSubscribe=NO")


def submit(n: int, tag: str) -> None:
    """n RUNNING jobs (40% rl__ with an earlier chain link each, 20% sft__, 20% eval-, 20% datagen
    array tasks) and n/5 that fail at once (ended in the window)."""
    n_rl, n_sft, n_eval = n * 2 // 5, n // 5, n // 5
    n_arr = n - n_rl - n_sft - n_eval
    for i in range(n_rl):
        old = LOGS / f"rl__{tag}_{i}-0.out"  # an earlier link: the same name, another id
        old.write_text("Training Step Progress: 1/600\n")
        os.utime(old, (time.time() - 3600, time.time() - 3600))
        sh("chown", f"{USER}:{USER}", str(old))
    loop = "for i in $(seq 0 $(({n} - 1))); do sbatch -Q -J {name} -o '{out}' --wrap {cmd}; done\n"
    out = str(LOGS / "%x-%j.out")
    script = loop.format(n=n_rl, name=f"rl__{tag}_$i", out=out, cmd=shlex.quote(STATIC))
    script += loop.format(n=n_sft, name=f"sft__{tag}_$i", out=out, cmd=shlex.quote(STATIC))
    script += loop.format(n=n_eval, name=f"eval-{tag}_$i", out=out, cmd=shlex.quote(STATIC))
    script += loop.format(
        n=max(1, n // 5), name=f"sft__{tag}_dead$i", out=out, cmd=shlex.quote("echo RuntimeError: x; exit 1")
    )
    if n_arr:
        arrays = [(k, min(10, n_arr - k)) for k in range(0, n_arr, 10)]
        for k, size in arrays:
            script += f"sbatch -Q -J datagen__{tag}_{k} -o '{LOGS}/%x_%A-%a.out' --array=1-{size} --wrap {shlex.quote(STATIC)}\n"
    as_sweep(script)


def ended(tag: str) -> int:
    """This size's failed jobs as slurmdbd's windowed answer lists them (what the gather asks)."""
    out = sh("sacct", "-u", USER, "-S", "now-1hours", "-E", "now", "-X", "-n", "-P", "-s", "F", "-o", "JobName")
    return sum(1 for line in out.splitlines() if line.startswith(f"sft__{tag}_dead"))


def sdiag_by_user() -> int:
    text = sh("sdiag")
    m = re.search(rf"^\s+{USER}\s+\(\s*\d+\)\s+count:(\d+)", text.split("by user", 1)[-1], re.M)
    return int(m.group(1)) if m else 0


def accepted() -> int:
    log = CLUSTER_DIR / "log" / "sshd-login01.log"
    return log.read_text(errors="replace").count("Accepted publickey") if log.exists() else 0


@dataclasses.dataclass
class Row:
    walls: list[float]
    cpu: float
    rpcs: int
    sessions: int
    processes: int | None
    jobs: int


def measure(script: str, marker: str, reps: int) -> Row:
    walls, cpus, rpcs, sessions, jobs = [], [], 0, 0, 0
    for k in range(reps):
        sh("sdiag", "-r")
        a = accepted()
        run = run_on_login01(script)
        if k == 0:
            rpcs, sessions = sdiag_by_user(), accepted() - a
            out = parse_gather_output(run.stdout, marker)
            jobs = sum(1 for name in out.records if name.startswith(("tail:", "ftail:")))
        walls.append(run.wall_s)
        cpus.append(run.cpu_s)
    traced = run_on_login01(script, strace=True)
    return Row(walls, statistics.median(cpus), rpcs, sessions, traced.processes, jobs)


def listing_choice(n_other: int) -> str:
    """ONE scontrol show job -o (every user's jobs) against ONE squeue -u -t all -O, with n_other
    held jobs of another user (root) on the cluster next to the sweep user's."""
    sh("bash", "-c", f"for i in $(seq 1 {n_other}); do sbatch -Q -H -J other_$i -o /dev/null --wrap true; done")
    res = []
    fmt = build_gather_script(GatherRequest(user=USER, window_start=0, window_end=1), "@@M@@")[0]
    paths = re.search(r"PATHS_FORMAT=(\S+)", fmt).group(1).strip("'")  # type: ignore[union-attr]
    for label, cmd in (("scontrol show job -o", "scontrol show job -o"),
                       ("squeue -u sweep -t all -O", f"squeue -u {USER} -t all -h -O '{paths}'")):  # fmt: skip
        sh("sdiag", "-r")
        t0 = time.perf_counter()
        text = as_sweep(cmd)
        took = time.perf_counter() - t0
        res.append(f"| `{label}` | {len(text.encode()) / 1e6:.2f} MB | {took:.2f} s | {sdiag_by_user()} |")
    sh("scancel", "-u", "root", check=False)
    head = f"\nStdOut listing, {n_other} other-user jobs on the cluster:\n| call | reply | wall | RPCs |\n|---|---|---|---|"
    return "\n".join([head, *res])


def main(sizes: list[int]) -> None:
    base_cpus, conf = node_cpus(), CONF.read_text()
    lines = ["| N | script | wall s (median) | login-node CPU s | processes | RPCs | SSH sessions | logs read |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    choice = ""
    try:
        for n in sizes:
            cancel_all()
            if n + n // 5 + 10 > node_cpus():
                make_room(n + n // 5 + 50)
            tag = f"b{n}"
            t_start = int(time.time()) - 60
            submit(n, tag)
            wait_until(f"{n} RUNNING", lambda n=n: count("squeue", "-h", "-u", USER, "-t", "RUNNING") >= n)
            time.sleep(5)  # the failing ones ended and every log written
            end = int(time.time()) - 1
            wait_until("ended jobs in the windowed sacct", lambda tag=tag, n=n: ended(tag) >= max(1, n // 5))
            req = GatherRequest(user=USER, window_start=t_start, window_end=end, settle_s=0, max_jobs=5000,
                                max_finished_logs=5000, max_arrays=5000, log_pattern=str(LOGS / "%x-%j.out"))  # fmt: skip
            reps = 3 if n <= 200 else 1
            scripts = {
                "old (per job)": old_gather_script(req),
                "new (python3)": build_gather_script(req),
                "new (shell path)": build_gather_script(dataclasses.replace(req, python="")),
                "minimal batch": (f"S=$(date -d @{t_start} +%FT%T); E=$(date -d @{end} +%FT%T)\n" + MINIMAL, "@@M"),
            }
            for label, (script, marker) in scripts.items():
                r = measure(script, marker, reps)
                lines.append(f"| {n} | {label} | {statistics.median(r.walls):.2f} | {r.cpu:.2f} | {r.processes} | "
                             f"{r.rpcs} | {r.sessions} | {r.jobs if 'minimal' not in label else '-'} |")  # fmt: skip
                print(lines[-1], flush=True)
            if n == 200:
                choice = listing_choice(2000)
                print(choice, flush=True)
            cancel_all()
            for f in LOGS.glob(f"*{tag}_*"):
                f.unlink()
    finally:
        cancel_all()
        sh("scancel", "-u", "root", check=False)
        restore(conf, base_cpus)
    print("\n".join(lines))
    print(choice)


if __name__ == "__main__":
    main([int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "10,200,1000").split(",")])
