#!/bin/bash
# A real Slurm in the test suite: starts munge and a one-node Slurm (slurmctld
# + slurmd, a generated slurm.conf, loopback only, its own ports, spool and
# state in a temporary folder), submits emitted grids with sbatch and checks:
#
#   1. a fourier smoke grid in which one array task fails on purpose and one is
#      cancelled mid-run (scancel), then the emitted script written again (only
#      the pending cells) and resubmitted: every cell recorded once, each
#      cell's metrics equal to those of a grid run here without any fault;
#   2. a vit smoke grid (a resumable family) whose running task is requeued
#      mid-run (scontrol requeue): it resumes from its last checkpoint and ends
#      where an uninterrupted run ends;
#   3. `pln grid --status` along the way.
#
# The daemons it started are stopped by pid however the test ends. Where it
# cannot run (not root, a program missing, no port) it says so and exits 77,
# which CTest reports as skipped.
#   cluster.sh PLN
set -euo pipefail
pln=$(readlink -f "$1")
python=/usr/bin/python3

skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root: munged and slurmd run as root in this one-node cluster"
for program in munged slurmctld slurmd sbatch squeue scancel scontrol sinfo; do
  command -v "$program" > /dev/null || skip "$program is not installed (scripts/bootstrap installs slurmctld, slurmd, slurm-client and munge)"
done

work=$(mktemp -d /tmp/pln-slurm-XXXXXX)
daemons=()
finish() {
  local code=$?
  for pid in "${daemons[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${daemons[@]}"; do wait "$pid" 2> /dev/null || true; done
  if [ "$code" -ne 0 ] && [ "$code" -ne 77 ]; then
    for log in "$work"/log/*.log; do echo "--- $log"; tail -n 20 "$log"; done
  fi
  rm -rf "$work"
  exit "$code"
}
trap finish EXIT
fail() { echo "FAILED: $*"; exit 1; }
# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.1 s until it succeeds.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq $((seconds * 10))); do "$@" > /dev/null 2>&1 && return 0; sleep 0.1; done
  fail "timed out after ${seconds}s waiting for $what"
}

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ctl_port=$(free_port) || skip "no free port on the loopback"
node_port=$(free_port) || skip "no free port on the loopback"
[ "$ctl_port" != "$node_port" ] || node_port=$(free_port)
mkdir -p "$work"/{munge,spool,state,log}

# munge, with a key and a socket of its own.
head -c 1024 /dev/urandom > "$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
munged --force --foreground --key-file "$work/munge/munge.key" --socket "$work/munge/socket" \
  --pid-file "$work/munge/munged.pid" --log-file "$work/log/munged.log" --seed-file "$work/munge/seed" \
  > "$work/log/munged.out" 2>&1 &
daemons+=($!)
wait_for 10 "munged's socket" test -S "$work/munge/socket"

cpus=$(nproc)
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
export SLURM_CONF="$work/slurm.conf"
cat > "$SLURM_CONF" <<EOF
ClusterName=plntest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$node_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=1
MinJobAge=2
NodeName=plnnode NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=test Nodes=plnnode Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i > "$work/log/slurmctld.out" 2>&1 &
daemons+=($!)
slurmd -D -N plnnode > "$work/log/slurmd.out" 2>&1 &
daemons+=($!)
wait_for 30 "the node to be idle" sh -c 'sinfo -h -N -o %T | grep -qx idle'
echo "slurm: one node (plnnode, $cpus CPUs), controller on 127.0.0.1:$ctl_port"

# run_array DIR: submits DIR/grid.slurm, waits (bounded) until every task has left the queue; prints the job id.
submit() { sbatch --parsable "$1/grid.slurm" | cut -d';' -f1; }
wait_job() { wait_for "$2" "job $1 to leave the queue" sh -c "[ -z \"\$(squeue -h -j $1 -o %i)\" ]"; }
status_field() {  # status_field DIR PRESET FAMILY FIELD
  "$pln" grid "$3" --preset "$2" --out "$1" --status --json | "$python" -c "import json, sys; print(json.load(sys.stdin)['$4'])"
}
running_pid() { "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["pid"])' "$1/running.json"; }
same_metrics() {  # same_metrics RECORDS REFERENCE METRIC...: every cell once, each metric bit-for-bit equal
  "$python" - "$@" <<'PY'
import csv, sys
records, reference, metrics = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = list(csv.DictReader(open(records)))
ref = {r["cell"]: r for r in csv.DictReader(open(reference))}
cells = [r["cell"] for r in rows]
assert len(cells) == len(set(cells)), f"a cell is recorded twice: {cells}"
assert set(cells) == set(ref), f"cells {sorted(set(ref) ^ set(cells))} are missing or extra"
for r in rows:
    for m in metrics:
        assert r[m] == ref[r["cell"]][m], f"{r['cell']}: {m} is {r[m]} on the cluster, {ref[r['cell']][m]} without faults"
print(f"{len(rows)} cells, each once; {', '.join(metrics)} equal to the run without faults, cell by cell")
PY
}

# ------------------------------------------------ 1. failures and a cancel
ref="$work/fourier-ref"
"$pln" grid fourier --preset smoke --out "$ref" --jobs 1 --threads 1 > "$work/log/fourier-ref.log"
grid="$work/fourier"
[ "$(status_field "$grid" smoke fourier pending)" = 4 ] || fail "a fresh grid is not 4 pending cells"
"$pln" grid fourier --preset smoke --out "$grid" --threads 1 --emit slurm --throttle 1 --time 0:10:00 > /dev/null
mapfile -t cells < "$grid/cells.txt"
grep -q '^#SBATCH --array=1-4%1$' "$grid/grid.slurm" || fail "grid.slurm does not throttle the array to one task"
# Task 3 fails on purpose: its training log cannot be written (a directory stands in its place).
mkdir -p "${cells[2]}/train.csv"
# Task 2 is cancelled mid-run: stopped once it has started, then scancel'd
# (its line made to train far longer, so that it cannot finish first).
sed -i '2s/ --threads / --set steps=1000000 --threads /' "$grid/commands.txt"
grep -q 'steps=1000000' "$grid/commands.txt" || fail "commands.txt has no --threads to lengthen task 2 by"
job=$(submit "$grid")
wait_for 60 "task 2 to start" test -f "${cells[1]}/running.json"
kill -STOP "$(running_pid "${cells[1]}")"
scancel "${job}_2"
wait_job "$job" 120
"$pln" grid fourier --preset smoke --out "$grid" --status
[ "$(status_field "$grid" smoke fourier done)" = 2 ] || fail "not 2 cells done after the first submission"
[ "$(status_field "$grid" smoke fourier failed)" = 1 ] || fail "the failed task is not reported as failed"
[ "$(status_field "$grid" smoke fourier pending)" = 1 ] || fail "the cancelled task is not pending"
"$pln" grid fourier --preset smoke --out "$grid" --status | grep -q "failed ${cells[2]##*/}: .*train.csv" \
  || fail "--status does not give the failed cell's last log line"
[ ! -f "${cells[1]}/summary.json" ] || fail "the cancelled cell has a summary"
# Resubmitted: the script written again holds the two pending cells only.
rm -r "${cells[2]}/train.csv"
"$pln" grid fourier --preset smoke --out "$grid" --threads 1 --emit slurm > "$work/log/emit2.log"
grep -q "(2 pending cells)" "$work/log/emit2.log" || fail "the second emission is not the two pending cells: $(cat "$work/log/emit2.log")"
job=$(submit "$grid")
wait_job "$job" 120
"$pln" grid fourier --preset smoke --out "$grid" --threads 1 > "$work/log/collect.log"
[ "$(status_field "$grid" smoke fourier done)" = 4 ] || fail "the grid did not finish"
same_metrics "$grid/records.csv" "$ref/records.csv" rel_l2 max_err final_loss
for cell in "${cells[@]}"; do [ -s "$cell/run.log" ] || fail "$cell has no run.log beside it"; done

# ------------------------------------------------ 2. a requeued resumable cell
vref="$work/vit-ref"
"$pln" grid vit --preset smoke --out "$vref" --jobs 1 --threads 1 > "$work/log/vit-ref.log"
vit="$work/vit"
"$pln" grid vit --preset smoke --out "$vit" --threads 1 --emit slurm --throttle 1 > /dev/null
mapfile -t vcells < "$vit/cells.txt"
grep -q '^#SBATCH --requeue$' "$vit/grid.slurm" || fail "grid.slurm does not ask to be requeued"
job=$(submit "$vit")
# Stopped as soon as its first epoch's checkpoint is written, then requeued:
# Slurm kills it and runs it again, without the delay it gives requeued jobs.
wait_for 120 "task 1 to start" test -f "${vcells[0]}/running.json"
pid=$(running_pid "${vcells[0]}")
for _ in $(seq 12000); do [ -f "${vcells[0]}/checkpoint.safetensors" ] && break; sleep 0.01; done
kill -STOP "$pid"
scontrol requeue "${job}_1"
wait_for 30 "task 1 to be requeued" sh -c "squeue -h -j ${job}_1 -o %T | grep -qx PENDING"
scontrol update "JobId=${job}_1" StartTime=now
wait_job "$job" 300
grep -Eq "resumed from .*checkpoint.safetensors after step [0-9]+, epoch 1" "${vcells[0]}/run.log" \
  || fail "the requeued cell did not resume from its checkpoint: $(tail -n 5 "${vcells[0]}/run.log")"
"$pln" grid vit --preset smoke --out "$vit" --threads 1 > "$work/log/vit-collect.log"
[ "$(status_field "$vit" smoke vit done)" = 2 ] || fail "the vit grid did not finish"
same_metrics "$vit/records.csv" "$vref/records.csv" test_top1 best_test_top1 train_acc final_loss
echo "slurm cluster test passed: failed and cancelled cells rerun, a requeued cell resumed, records as without faults"
