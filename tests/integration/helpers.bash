# Shared helpers for colmet's bats tests. COLMET_BIN points at the build's bin/.
# Every test works in its own $BATS_TEST_TMPDIR and removes what it created.

: "${COLMET_BIN:?COLMET_BIN must name the bin directory of a build}"
PY=/usr/bin/python3            # Debian's python, where python3-h5py lives
CGROOT=/sys/fs/cgroup
V1_CONTROLLERS="cpuacct cpu memory blkio pids cpuset"
# stop_pid, within_pct, at_least, CPU_PCT, cputime_of
. "${BASH_SOURCE[0]%/*}/shell_common.sh"

require_root() {
  [ "$(id -u)" -eq 0 ] || skip "needs root to create cgroups and read /proc/PID/io"
}

require_h5py() {
  "$PY" -c 'import h5py' 2>/dev/null || skip "python3-h5py is not installed for $PY"
}

cgroup_is_v2() { [ -e "$CGROOT/cgroup.controllers" ]; }

# perf_event exists in this kernel (user-mode Linux, the cgroup v2 guest of
# tests/integration/uml, has none).
have_perf() { [ -e /proc/sys/kernel/perf_event_paranoid ]; }
require_perf() {
  have_perf || skip "this kernel has no perf_event (user-mode Linux has none): perf counters are tested on the host"
}

# make_job_cgroup REL: create the job's cgroup like a scheduler would.
make_job_cgroup() {
  local rel=$1 c
  if cgroup_is_v2; then
    # As systemd and Slurm do: the controllers enabled on the way down.
    local d=$CGROOT part
    for part in $(tr / ' ' <<<"$rel"); do
      tr ' ' '\n' <"$d/cgroup.controllers" | sed 's/^/+/' | tr '\n' ' ' >"$d/cgroup.subtree_control" 2>/dev/null || true
      d=$d/$part
      mkdir -p "$d"
    done
  else
    for c in $V1_CONTROLLERS; do
      [ -d "$CGROOT/$c" ] || continue
      mkdir -p "$CGROOT/$c$rel"
      if [ "$c" = cpuset ]; then
        cat "$CGROOT/cpuset/cpuset.cpus" > "$CGROOT/cpuset$(dirname "$rel")/cpuset.cpus" 2>/dev/null || true
        cat "$CGROOT/cpuset/cpuset.mems" > "$CGROOT/cpuset$(dirname "$rel")/cpuset.mems" 2>/dev/null || true
        cat "$CGROOT/cpuset/cpuset.cpus" > "$CGROOT/cpuset$rel/cpuset.cpus"
        cat "$CGROOT/cpuset/cpuset.mems" > "$CGROOT/cpuset$rel/cpuset.mems"
      fi
    done
  fi
}

# in_cgroup REL CMD...: run CMD inside the job's cgroup (every hierarchy).
in_cgroup() {
  local rel=$1 dirs="" c
  shift
  if cgroup_is_v2; then
    dirs="$CGROOT$rel"
  else
    for c in $V1_CONTROLLERS; do
      [ -d "$CGROOT/$c$rel" ] && dirs="$dirs $CGROOT/$c$rel"
    done
  fi
  # shellcheck disable=SC2016
  sh -c 'for d in $0; do echo $$ > "$d/cgroup.procs" || exit 70; done; exec "$@"' "$dirs" "$@"
}

# cgroup_exists REL: true when the job's cgroup is still in any hierarchy.
cgroup_exists() {
  local rel=$1 c
  if cgroup_is_v2; then [ -d "$CGROOT$rel" ]; return; fi
  for c in $V1_CONTROLLERS; do
    [ -d "$CGROOT/$c$rel" ] && return 0
  done
  return 1
}

# remove_job_cgroup REL: kill what is left and rmdir it (deepest first).
remove_job_cgroup() {
  local rel=$1 c d
  local dirs=()
  if cgroup_is_v2; then dirs=("$CGROOT$rel"); else
    for c in $V1_CONTROLLERS; do dirs+=("$CGROOT/$c$rel"); done
  fi
  for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  done
  sleep 0.1
  for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

# start_collector URI DIR [args...]: background collector, pid in $COLLECTOR_PID.
start_collector() {
  local uri=$1 dir=$2; shift 2
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$uri" --hdf5-dir "$dir" -v "$@" \
    2>>"$BATS_TEST_TMPDIR/collector.log" &
  COLLECTOR_PID=$!
}

# h5 FILE EXPR: evaluate a Python expression with f = the open HDF5 file.
h5() {
  "$PY" - "$1" "$2" <<'PYEOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
def seg(host, backend, n=0):
    g = f["hosts"][host][backend]["segment_%d" % n]
    names = [x.decode() if isinstance(x, bytes) else x for x in g.attrs["names"]]
    return names, g["values"][:], g["time"][:]
def last(host, backend, metric):
    names, values, _ = seg(host, backend)
    return float(values[-1, names.index(metric)])
def col(host, backend, metric):
    names, values, _ = seg(host, backend)
    return values[:, names.index(metric)]
print(eval(sys.argv[2]))
PYEOF
}

