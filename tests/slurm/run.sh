#!/usr/bin/env bash
# The Slurm workflow (slurm/sweep-array.sbatch + slurm/merge.sbatch) on a one-node Slurm
# cluster on this machine: installs Slurm and MUNGE from Debian packages if missing, starts
# munged, slurmctld and slurmd as root (state, logs and sockets under $W only; nothing in
# /etc is changed), then
#   1. a 4-task array sweep of scenarios/quickstart.yaml and merge.sbatch submitted with
#      --dependency=afterok:<array>: the merged CSV must be byte-identical to an unsharded
#      `hicache-sim sweep` of the same scenario;
#   2. the same with slower points (--set runs=...) and the merge the array's first task
#      submits; one task killed mid-shard with SIGKILL and requeued: it must resume its own
#      shard ("N resumed", N = the rows its journal kept) and the merge must again be
#      byte-identical.
# Exits non-zero on any failure; stops the daemons it started on exit. Re-runnable.
#
#   bash tests/slurm/run.sh        # root, Debian; HICACHE_SIM=/path/to/hicache-sim skips the build
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
W="${HICACHE_SLURM_WORK:-/tmp/hicache-slurm-test}"
conf="$W/etc/slurm.conf"
deadline=$(( $(date +%s) + ${HICACHE_SLURM_TIMEOUT:-600} ))
t0=$(date +%s)

log() { echo "[slurm-test +$(( $(date +%s) - t0 ))s] $*"; }
die() {
  echo "slurm-test: FAIL: $*" >&2
  for f in "$W"/log/*.log; do
    [ -e "$f" ] && { echo "--- tail $f" >&2; tail -n 25 "$f" >&2; }
  done
  exit 1
}

[ "$(id -u)" = 0 ] || die "run as root (the test starts slurmctld/slurmd/munged)"

# --- Slurm and MUNGE from Debian packages --------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
   || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
  log "installing slurmctld slurmd slurm-client munge (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi
log "$(slurmctld -V), munge $(munged --version 2>&1 | awk '{print $2; exit}')"

# --- the binary --------------------------------------------------------------------------
if [ -n "${HICACHE_SIM:-}" ]; then
  bin=$(readlink -f "$HICACHE_SIM")
else
  cargo build --release --quiet
  # Cargo's own target directory when CARGO_TARGET_DIR moves it.
  target="${CARGO_TARGET_DIR:-$repo/target}"
  case "$target" in /*) ;; *) target="$repo/$target" ;; esac
  bin="$target/release/hicache-sim"
fi
[ -x "$bin" ] || die "no hicache-sim binary at $bin"

# --- stop what an earlier run left behind (by pid file, only our own daemons) ----------
stop_pidfile() {
  local f=$1 pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  if [ -d "/proc/$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "$W"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
stop_all() {
  set +e
  if [ -s "$W/run/slurmctld.pid" ]; then
    SLURM_CONF=$conf timeout 10 scancel --quiet --user=root 2>/dev/null
  fi
  stop_pidfile "$W/run/slurmd.pid"
  stop_pidfile "$W/run/slurmctld.pid"
  stop_pidfile "$W/run/munged.pid"
}
stop_all
if [ "${HICACHE_SLURM_KEEP:-0}" = 1 ]; then   # debugging: leave the cluster up (SLURM_CONF=$conf)
  trap 'rc=$?; log "daemons left running: export SLURM_CONF=$conf"; exit $rc' EXIT
else
  trap 'rc=$?; stop_all; log "daemons stopped"; exit $rc' EXIT
fi
set -e

rm -rf "$W"
mkdir -p "$W"/{etc,run,log,state,spool,munge,jobs}
chmod 700 "$W" "$W/munge"

# --- MUNGE: a fresh key and a private socket (a system munged, if any, is not touched) -
dd if=/dev/urandom of="$W/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$W/munge/munge.key"
sock="$W/munge/munge.socket"
munged --force --key-file="$W/munge/munge.key" --socket="$sock" \
  --pid-file="$W/run/munged.pid" --log-file="$W/log/munged.log" --seed-file="$W/munge/munged.seed" \
  || die "munged did not start"
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
munge -S "$sock" -n | unmunge -S "$sock" >/dev/null || die "munge/unmunge round trip failed"

# --- slurm.conf: one node, this machine, no cgroups, no accounting -----------------------
cpus=$(nproc)
mem_mb=$(( $(awk '/^MemTotal/ {print $2}' /proc/meminfo) / 1024 * 8 / 10 ))
port=${HICACHE_SLURM_PORT:-16817}
cat > "$conf" <<EOF
ClusterName=hicache-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$(( port + 1 ))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock,cred_expire=10
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/run/slurmctld.pid
SlurmdPidFile=$W/run/slurmd.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=3600
InactiveLimit=0
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf

slurmctld -c -f "$conf" || die "slurmctld did not start"
slurmd -N localhost -f "$conf" || die "slurmd did not start"
state=""
for _ in $(seq 60); do
  state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || { sinfo -R >&2 || true; die "node localhost not idle after 60 s (state: '${state:-no answer}')"; }
log "cluster up: $(sinfo -h -o '%P %D %T %c CPUs')"

# --- helpers ---------------------------------------------------------------------------
# job_states ID: one "TASK=STATE" per job or array task (e.g. 12_3=RUNNING, 12_[2-4]=PENDING).
job_states() {
  scontrol -o show job "$1" 2>/dev/null | awk '{
    id = ""; a = ""; t = ""; st = ""
    for (i = 1; i <= NF; i++) {
      split($i, kv, "=")
      if (kv[1] == "JobId") id = kv[2]
      else if (kv[1] == "ArrayJobId") a = kv[2]
      else if (kv[1] == "ArrayTaskId") t = kv[2]
      else if (kv[1] == "JobState") st = kv[2]
    }
    print (a != "" ? a "_" t : id) "=" st
  }'
}
# wait_done ID...: until every job (and array task) has finished; fails unless COMPLETED.
wait_done() {
  local id s
  for id in "$@"; do
    while :; do
      s=$(job_states "$id")
      [ -n "$s" ] || die "job $id unknown to slurmctld"
      if ! grep -qE '=(PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUED|RESIZING|SUSPENDED)' <<<"$s"; then
        break
      fi
      if grep -q 'Reason=DependencyNeverSatisfied' < <(scontrol -o show job "$id"); then
        if [ -n "${reset_dep:-}" ]; then
          scontrol update JobId="$id" Dependency="$reset_dep" || die "could not reset the dependency of $id"
          log "job $id was DependencyNeverSatisfied: scontrol update JobId=$id Dependency=$reset_dep"
          reset_dep="" reset_at=$(date +%s)
        elif [ "$(date +%s)" -gt $(( ${reset_at:-0} + 15 )) ]; then
          die "job $id: DependencyNeverSatisfied"
        fi
      fi
      [ "$(date +%s)" -lt "$deadline" ] || die "timed out waiting for job $id: $(tr '\n' ' ' <<<"$s")"
      sleep 1
    done
    if grep -vqE '=COMPLETED' <<<"$s"; then
      die "job $id did not complete: $(tr '\n' ' ' <<<"$s")"
    fi
  done
}
show_shards() {
  local out=$1 d
  for d in "$out"/shard-*-of-4; do
    log "  shard $(basename "$d"): $(cd "$d" && ls results.shard-* | tr '\n' ' ')($(($(wc -l < "$d"/results.shard-*.csv) - 1)) rows)"
  done
}
sweep_array() {  # OUT MERGE(0|1) SWEEP_ARGS... -> array job id
  local out=$1 merge=$2
  shift 2
  sbatch --parsable --array=1-4 --cpus-per-task=1 --mem=256M --time=00:10:00 \
    --output="$W/jobs/%x-%A_%a.out" \
    --export=ALL,HICACHE_SIM="$bin",HICACHE_SLURM_MERGE="$merge" \
    slurm/sweep-array.sbatch scenarios/quickstart.yaml "$out" "$@"
}

# --- 1. the array and its merge ----------------------------------------------------------
out1="$W/out1"
"$bin" sweep scenarios/quickstart.yaml --out "$W/ref1" --quiet 2>/dev/null
array1=$(sweep_array "$out1" 0)
merge1=$(sbatch --parsable --dependency="afterok:$array1" --kill-on-invalid-dep=no \
  --cpus-per-task=1 --mem=256M --time=00:10:00 --output="$out1/hicache-merge-%j.out" \
  --export=ALL,HICACHE_SIM="$bin" slurm/merge.sbatch "$out1" 4)
log "sbatch --array=1-4 slurm/sweep-array.sbatch: job $array1"
log "sbatch --dependency=afterok:$array1 slurm/merge.sbatch: job $merge1 ($(scontrol -o show job "$merge1" | grep -o 'Dependency=[^ ]*'))"
wait_done "$array1" "$merge1"
log "array $array1: $(job_states "$array1" | tr '\n' ' ')"
show_shards "$out1"
log "merge $merge1: $(grep -h 'merged' "$out1"/hicache-merge-"$merge1".out)"
cmp "$out1/results.csv" "$W/ref1/results.csv" || die "merged CSV differs from the unsharded sweep"
log "cmp $out1/results.csv $W/ref1/results.csv: equal ($(wc -l < "$out1/results.csv") lines)"

# --- 2. one task killed mid-shard, requeued, resumed --------------------------------------
out2="$W/out2"
slow=(--set "runs=${HICACHE_SLURM_RUNS:-200000}")   # ~1 s per point: time to kill a task mid-shard
"$bin" sweep scenarios/quickstart.yaml --out "$W/ref2" --quiet --jobs "$cpus" "${slow[@]}" 2>/dev/null
array2=$(sweep_array "$out2" 1 "${slow[@]}")
log "sbatch --array=1-4 slurm/sweep-array.sbatch ${slow[*]}: job $array2"
victim="${array2}_2"
journal="$out2/shard-2-of-4/results.shard-2-of-4.journal.jsonl"
rows=0
while :; do
  [ "$(date +%s)" -lt "$deadline" ] || die "timed out waiting for $victim to write a row"
  if [ -s "$journal" ]; then rows=$(( $(wc -l < "$journal") - 1 )); fi
  [ "$rows" -ge 1 ] && break
  sleep 0.1
done
owned=$(awk -F, 'NR>1' "$W/ref2/results.csv" | awk -F, '($1 % 4) == 1' | wc -l)
[ "$rows" -lt "$owned" ] || die "$victim finished its $owned points before it could be killed (raise HICACHE_SLURM_RUNS)"
scancel --signal=KILL "$victim"
for _ in $(seq 60); do
  s=$(job_states "$victim")
  grep -qE '=(RUNNING|COMPLETING)' <<<"$s" || break
  sleep 0.5
done
kept=$(( $(wc -l < "$journal") - 1 ))
log "scancel --signal=KILL $victim after $rows of $owned rows: $s; journal keeps $kept rows"
grep -q '=COMPLETED' <<<"$s" && die "$victim completed before the kill landed"
scontrol requeue "$victim" || die "scontrol requeue $victim failed"
for _ in $(seq 120); do [ -s "$out2/.merge-submitted" ] && break; sleep 0.5; done
[ -s "$out2/.merge-submitted" ] || die "task 1 of $array2 did not submit the merge job"
merge2=$(cat "$out2/.merge-submitted")
log "merge job $merge2 (submitted by task 1 of $array2): $(scontrol -o show job "$merge2" | grep -o 'Dependency=[^ ]*')"
log "scontrol requeue $victim: $(job_states "$victim")"
wait_done "$array2"
# The kill failed the merge's afterok for good (Slurm 22.05 does not re-arm a dependency when
# the task is requeued, and afterok on the whole array stays failed): once the array has
# completed, wait_done sets the dependency again, on the four tasks (as slurm/README.md says).
reset_dep="afterok:$(seq -s: -f "${array2}_%g" 1 4)" wait_done "$merge2"
log "array $array2: $(job_states "$array2" | tr '\n' ' ')"
show_shards "$out2"
victim_log="$W/jobs/hicache-sweep-${array2}_2.out"
resumed=$(grep -oE '[0-9]+ resumed' "$victim_log" | tail -n 1)
log "requeued $victim: $(grep -E 'restart|resumed' "$victim_log" | tr '\n' '|')"
[ "${resumed% resumed}" = "$kept" ] && [ "$kept" -ge 1 ] \
  || die "$victim did not resume its $kept kept rows (its log says '${resumed:-nothing}')"
log "merge $merge2: $(grep -h 'merged' "$out2"/hicache-merge-"$merge2".out)"
cmp "$out2/results.csv" "$W/ref2/results.csv" || die "merged CSV (after the requeue) differs from the unsharded sweep"
log "cmp $out2/results.csv $W/ref2/results.csv: equal ($(wc -l < "$out2/results.csv") lines)"
log "PASS in $(( $(date +%s) - t0 )) s"
