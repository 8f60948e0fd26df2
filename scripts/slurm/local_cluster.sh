#!/usr/bin/env bash
# A one-host Slurm cluster for tests and trying rlswarm.sbatch: munge,
# slurmctld and slurmd of Debian's `slurm-wlm` and `munge`, run as root with
# their configuration, state and logs in DIR (nothing under /etc changes
# except the munge key the package made). No cgroups: processes are tracked
# through /proc, which is enough for one host.
#
#   scripts/slurm/local_cluster.sh start DIR   # prints `export SLURM_CONF=...`
#   scripts/slurm/local_cluster.sh stop DIR
set -euo pipefail
action=${1:?usage: local_cluster.sh start|stop DIR}
dir=${2:?usage: local_cluster.sh start|stop DIR}
dir=$(mkdir -p "$dir" && cd "$dir" && pwd)

stop() {
  for pidfile in "$dir"/slurmd.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2> /dev/null || true
  done
  sleep 0.5
}

if [ "$action" = stop ]; then
  stop
  exit 0
fi
[ "$action" = start ] || {
  echo "usage: local_cluster.sh start|stop DIR" >&2
  exit 2
}
[ "$(id -u)" = 0 ] || {
  echo "local_cluster.sh: needs root (slurmd runs jobs as their users)" >&2
  exit 1
}
for tool in munged slurmctld slurmd; do
  command -v "$tool" > /dev/null || PATH=$PATH:/usr/sbin
  command -v "$tool" > /dev/null || {
    echo "local_cluster.sh: no $tool (apt-get install slurm-wlm munge)" >&2
    exit 1
  }
done

host=$(hostname -s)
cpus=$(nproc)
memory_mb=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512))
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
cat > "$dir/slurm.conf" << EOF
ClusterName=rlswarm-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=${RLSWARM_SLURMCTLD_PORT:-16817}
SlurmdPort=${RLSWARM_SLURMD_PORT:-16818}
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
echo > "$dir/cgroup.conf"

munged --force --socket="$dir/munge/munge.socket" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munge/munge.seed"
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 100); do
  if sinfo -h -o '%T' 2> /dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "local_cluster.sh: the node did not come up; logs in $dir" >&2
tail -n 20 "$dir"/slurmctld.log "$dir"/slurmd.log >&2 || true
exit 1
