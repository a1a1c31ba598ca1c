# Shared by the OAR integration tests (jrm_test.sh, full_oar_test.sh); sourced.
# Needs COLMET_BIN (the build's bin directory). Every helper that changes the
# machine registers its undo step with `on_exit`; `run_cleanup` runs them in
# reverse order from the EXIT trap, also when a check fails.

: "${COLMET_BIN:?COLMET_BIN must name the bin directory of a build}"
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
PY=/usr/bin/python3
OARDODO=/usr/lib/oar/oardodo/oardodo
CGROOT=/sys/fs/cgroup
LINKS=/dev/oar_cgroups_links
FAILS=0
CLEANUP=()
# stop_pid, within_pct, at_least, CPU_PCT, cputime_of
. "$SRC/tests/integration/shell_common.sh"

log() { echo "[$(date +%T)] $*"; }
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
check() { # check DESCRIPTION CMD...: run CMD, count a failure if it fails
  local what=$1; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

on_exit() { CLEANUP+=("$*"); }
run_cleanup() { # each step in a subshell: a step cannot change the loop or stop the others
  local step_idx
  set +e
  for ((step_idx = ${#CLEANUP[@]} - 1; step_idx >= 0; step_idx--)); do
    (eval "${CLEANUP[$step_idx]}") || echo "cleanup step failed: ${CLEANUP[$step_idx]}"
  done
  CLEANUP=()
}

require_oar() { # require_oar PACKAGE...: skip unless root and the packages are installed
  [ "$(id -u)" -eq 0 ] || skip "needs root (oardodo, cgroups, users)"
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      skip "Debian package $p is not installed (scripts/install-deps.sh installs the OAR packages)"
  done
  [ -x "$OARDODO" ] && getent passwd oar >/dev/null || skip "no oardodo or no oar user: broken OAR install"
  "$PY" -c 'import h5py' 2>/dev/null || skip "python3-h5py is missing"
  [ -e "$CGROOT/cpuset/cpuset.cpus" ] || skip "needs the cgroup v1 cpuset hierarchy at $CGROOT/cpuset (OAR 2.5 has no cgroup v2 support)"
  local b
  for b in colmet-job colmet-node colmet-collector colmet-workload colmet-cputime; do
    [ -x "$COLMET_BIN/$b" ] || skip "$COLMET_BIN/$b is not built"
  done
}

# make_workdir: $WORK, a scratch directory other users can traverse.
make_workdir() {
  WORK=$(mktemp -d "/tmp/colmet-oar-$1.XXXXXX")
  chmod 755 "$WORK"
  on_exit "rm -rf '$WORK'"
}

# install_colmet: the build's binaries in a private prefix ($PREFIX/sbin), as
# the hooks run them (through oardodo, as root); the test tools colmet-workload
# and colmet-cputime (the jobs' CPU truth) in $PREFIX/bin, for the job users.
install_colmet() {
  PREFIX=$WORK/prefix
  mkdir -p "$PREFIX/sbin" "$PREFIX/bin"
  install -m 755 "$COLMET_BIN/colmet-job" "$COLMET_BIN/colmet-node" "$COLMET_BIN/colmet-collector" "$PREFIX/sbin/"
  install -m 755 "$COLMET_BIN/colmet-workload" "$COLMET_BIN/colmet-cputime" "$PREFIX/bin/"
}

# make_test_user NAME: a throw-away user (the JRM clean deletes its files in /tmp).
make_test_user() {
  TUSER=$1
  getent passwd "$TUSER" >/dev/null && { userdel -r "$TUSER" >/dev/null 2>&1 || true; }
  useradd -m -s /bin/bash "$TUSER"
  on_exit "userdel -r '$TUSER' >/dev/null 2>&1"
  # The JRM's lock files (per user, and its own lock).
  on_exit "rm -f '/var/lib/oar/cpuset.lock.$TUSER'"
  [ -e /var/lib/oar/job_manager_lock_file ] || on_exit "rm -f /var/lib/oar/job_manager_lock_file"
}

# ensure_perf_event: the perf_event v1 hierarchy the JRM links (oar.md 6.6). It
# is left mounted: other cgroups may live in it by the end of the test, and
# colmet-job mounts the same hierarchy itself when no one has.
ensure_perf_event() {
  mkdir -p "$CGROOT/perf_event"
  mountpoint -q "$CGROOT/perf_event" || mount -t cgroup -o perf_event cgroup "$CGROOT/perf_event"
}

# prepare_oar_cgroups: record what the JRM will create so that it is removed
# afterwards; link perf_event if the JRM already made its links without it.
prepare_oar_cgroups() {
  local c
  if [ ! -e "$LINKS" ]; then
    on_exit "rm -rf '$LINKS'; if [ -L /dev/cpuset ]; then rm -f /dev/cpuset; fi"
  elif [ ! -e "$LINKS/perf_event" ]; then
    ln -s "$CGROOT/perf_event" "$LINKS/perf_event"
    on_exit "rm -f '$LINKS/perf_event'"
  fi
  for c in cpuset cpu cpuacct devices freezer perf_event; do
    [ -d "$CGROOT/$c/oar" ] || on_exit "rmdir '$CGROOT/$c/oar' 2>/dev/null || true  # kept if others use it"
  done
}

# start_collector: a private collector on $WORK/collector.ipc writing to $WORK/h5.
start_collector() {
  mkdir -p "$WORK/h5"
  COLLECTOR_URI=ipc://$WORK/collector.ipc
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$COLLECTOR_URI" --hdf5-dir "$WORK/h5" -v \
    > "$WORK/collector.log" 2>&1 &
  COLLECTOR_PID=$!
  on_exit "stop_pid $COLLECTOR_PID"
}

# write_colmet_conf: the samplers' configuration (private collector, 0.5 s).
write_colmet_conf() {
  CONF=$WORK/colmet.conf
  printf '[node]\nzeromq-uri = %s\nsample-period = 0.5\nspool-dir = %s\n' "$COLLECTOR_URI" "$WORK/spool" > "$CONF"
}

# h5 FILE EXPR: a Python expression on the open HDF5 file f (helpers as in helpers.bash).
h5() {
  "$PY" - "$1" "$2" <<'PYEOF'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
host = list(f["hosts"])[0]
def names(backend):
    return [x.decode() if isinstance(x, bytes) else x for x in f["hosts"][host][backend]["segment_0"].attrs["names"]]
def last(backend, metric):
    g = f["hosts"][host][backend]["segment_0"]
    return float(g["values"][-1, names(backend).index(metric)])
def attr(name):
    return f["hosts"][host].attrs[name]
def before(backend, metric, t_ns):  # the value of the last sample taken at or before t_ns (epoch ns)
    g = f["hosts"][host][backend]["segment_0"]
    t = g["time"][:]
    return float(g["values"][max(k for k in range(len(t)) if t[k] <= t_ns), names(backend).index(metric)])
def after(backend, metric, t_ns):  # the value of the first sample taken at or after t_ns (epoch ns)
    g = f["hosts"][host][backend]["segment_0"]
    t = g["time"][:]
    return float(g["values"][min(k for k in range(len(t)) if t[k] >= t_ns), names(backend).index(metric)])
def period(backend):
    t = f["hosts"][host][backend]["segment_0"]["time"][:]
    d = sorted(t[i + 1] - t[i] for i in range(len(t) - 1))
    return round(float(d[len(d) // 2]) / 1e9, 1)
print(eval(sys.argv[2]))
PYEOF
}

# job_leftovers NAME: print what is left of job cgroup NAME (/oar/NAME) in any hierarchy.
job_leftovers() {
  local d
  for d in "$CGROOT"/*/oar/"$1"; do
    [ -d "$d" ] && echo "$d"
  done
  return 0
}

# gone PID: the process has exited (a zombie counts as gone: PID 1 may be slow to reap).
gone() {
  local st
  st=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null)
  [ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}

# sampler_pids JOB: pids of colmet-node processes sampling JOB.
sampler_pids() {
  local p
  for p in $(pgrep -x colmet-node 2>/dev/null); do
    gone "$p" && continue
    tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q -- "--job-id $1 " && echo "$p"
  done
  return 0
}
