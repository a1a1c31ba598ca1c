#!/usr/bin/env bats
# The job's share of the node's energy (backend "energy", colmet-node(8)
# "energy (the job's share)"): two real jobs on this node, in real cgroups
# with CPU weights of 3 to 1 (two busy loops each, so together they keep
# both CPUs busy and get about 1.5 and 0.5 CPUs), each with its own
# colmet-node reading a fixture powercap tree that a writer turns at 20 W,
# its counter wrapping every 1.25 s, and both advancing one node energy
# ledger of the test's own. Their energies must be in the ratio of their CPU
# time as their cgroups account it (within 2 %), the node's energy must be
# what was written (no wrap lost or counted twice: in a's rapl values, and
# in the ledger, 20 W over its time within 2 %), and once both jobs left the
# ledger, the shares their files end with must be what it retired and, with
# its idle part (the CPU time outside the two jobs: the test's tools, and
# whatever else the machine runs meanwhile), make its energy exactly.

load helpers

setup() {
  require_root
  require_h5py
  [ "$(nproc)" -eq 2 ] || skip "written for a 2-CPU machine (the quotas fill it): this one has $(nproc)"
  SYS="$BATS_TEST_TMPDIR/sys"
  RAPL="$SYS/class/powercap/intel-rapl:0"
  mkdir -p "$RAPL"
  echo package-0 > "$RAPL/name"
  printf '%015d\n' 0 > "$RAPL/energy_uj"
  echo 25000000 > "$RAPL/max_energy_range_uj"
  OUT="$BATS_TEST_TMPDIR/out"
  URI="tcp://127.0.0.1:$(free_port)"
  A="/colmet-test/energy-a-$$"
  B="/colmet-test/energy-b-$$"
  T="/colmet-test/energy-tools-$$"   # the collector, the samplers and the writer
  PIDS=()
}

# move_to REL: this test's shell (and what it starts next) into REL, in
# every hierarchy ("" : back to the root).
move_to() {
  local c
  if cgroup_is_v2; then echo "$BASHPID" > "$CGROOT$1/cgroup.procs"; return; fi
  for c in $V1_CONTROLLERS; do
    [ -d "$CGROOT/$c$1" ] && echo "$BASHPID" > "$CGROOT/$c$1/cgroup.procs"
  done
  return 0
}

teardown() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  # What is left in the tools' cgroup is bats' own: back to the root, not killed.
  local d p
  for d in "$CGROOT$T" "$CGROOT"/*"$T"; do
    [ -f "$d/cgroup.procs" ] || continue
    for p in $(cat "$d/cgroup.procs"); do echo "$p" > "${d%"$T"}/cgroup.procs" 2>/dev/null || true; done
  done
  remove_job_cgroup "$A"
  remove_job_cgroup "$B"
  remove_job_cgroup "$T"
  rmdir "$CGROOT"/*/colmet-test "$CGROOT/colmet-test" 2>/dev/null || true
  for f in collector.log node-a.log node-b.log; do
    [ -f "$BATS_TEST_TMPDIR/$f" ] && tail -n 5 "$BATS_TEST_TMPDIR/$f" | sed "s/^/# $f: /" >&3
  done
  true
}

# weight REL W: the cgroup's CPU weight (v2 cpu.weight; v1 cpu.shares, x 1024 / 100).
weight() {
  if cgroup_is_v2; then
    echo "$2" > "$CGROOT$1/cpu.weight"
  else
    echo $(($2 * 1024 / 100)) > "$CGROOT/cpu$1/cpu.shares"
  fi
}

# busy REL N: N busy loops in the job's cgroup.
busy() {
  local i
  for ((i = 0; i < $2; i++)); do
    in_cgroup "$1" sh -c 'while :; do :; done' &
    PIDS+=($!)
  done
}

@test "two jobs at 3:1 CPU weights share the node's energy in the ratio of their CPU time" {
  for rel in "$A" "$B" "$T"; do make_job_cgroup "$rel"; done
  # The test comes first on this machine (the test command builds in the
  # background meanwhile: RUN_SERIAL keeps only other tests away), and in
  # it the tools (this shell, the collector, the samplers, the writer) come
  # before the jobs' busy loops: samples and the counter on time.
  weight /colmet-test 10000
  weight "$T" 10000
  weight "$A" 300
  weight "$B" 100
  move_to "$T"
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$URI" \
    --hdf5-dir "$OUT" --flush-interval 1 -v 2>>"$BATS_TEST_TMPDIR/collector.log" &
  COLLECTOR_PID=$!
  # 20 W, from the clock (a late write catches up), every 20 ms, in place
  # (the sampler keeps the file open).
  "$PY" - "$RAPL/energy_uj" <<'PYEOF' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
start = time.monotonic()
while True:
    time.sleep(0.02)
    os.pwrite(fd, b"%015d\n" % (int((time.monotonic() - start) * 20_000_000) % 25_000_000), 0)
PYEOF
  PIDS+=($!)
  busy "$A" 2
  busy "$B" 2
  for job in a b; do
    rel=$A; [ $job = b ] && rel=$B
    "$COLMET_BIN/colmet-node" --config /dev/null --job-id "energy-$job-$$" --cgroup "$rel" --zeromq-uri "$URI" \
      --sample-period 0.5 --sysfs-root "$SYS" --enable-RAPL --hostname energy-host --control-dir "" \
      --energy-ledger "$BATS_TEST_TMPDIR/run/energy.ledger" -v \
      2>"$BATS_TEST_TMPDIR/node-$job.log" &
    PIDS+=($!)
  done
  sleep 8
  for p in "${PIDS[@]:(-2)}"; do stop_pid "$p" 10; done
  stop_pid "$COLLECTOR_PID" 30; COLLECTOR_PID=
  move_to ""
  grep -q "backend energy: the job's share of 1 RAPL domains, through the node's ledger" "$BATS_TEST_TMPDIR/node-a.log"
  run "$PY" - "$OUT/energy-a-$$.h5" "$OUT/energy-b-$$.h5" "$BATS_TEST_TMPDIR/run/energy.ledger" <<'PYEOF'
import sys, h5py, numpy as np
def col(f, backend, metric):
    g = f["hosts/energy-host"][backend]["segment_0"]
    names = [n.decode() if isinstance(n, bytes) else n for n in g.attrs["names"]]
    return g["values"][:, names.index(metric)], g["time"][:]
out = {}
for label, path in zip("ab", sys.argv[1:3]):
    with h5py.File(path, "r") as f:
        share, t = col(f, "energy", "package_0_package")
        usage, _ = col(f, "cgroup_cpu", "usage")
        node, _ = col(f, "rapl", "package_0_package")
        ok = ~np.isnan(share)
        busy, _ = col(f, "energy", "node_busy_cpu")
        cpus, _ = col(f, "energy", "node_cpus")
        out[label] = dict(share=share[ok][-1], cpu=usage[ok][-1] - usage[ok][0], node=node[ok][-1] - node[ok][0],
                          steps=np.diff(node[ok]), dt=np.diff(t[ok]) / 1e9, u=col(f, "energy", "utilisation")[0],
                          summary=float(f["summary"].attrs["job_energy_j"]), t=t[ok], usage=usage[ok],
                          busy=busy[ok], cpus=cpus[ok], alloc=float(f["hosts/energy-host"].attrs["cpus"]),
                          shares=share[ok], node_e=node[ok], jobs=col(f, "energy", "ledger_jobs")[0])
a, b = out["a"], out["b"]
cpu_ratio, energy_ratio = a["cpu"] / b["cpu"], a["share"] / b["share"]
print(f"CPU: a {a['cpu']:.3f} s, b {b['cpu']:.3f} s (ratio {cpu_ratio:.3f}); energy: a {a['share']:.2f} J, "
      f"b {b['share']:.2f} J (ratio {energy_ratio:.3f}); node {a['node']:.2f} J; utilisation min "
      f"{np.nanmin(a['u']):.3f}; summary a {a['summary']:.2f} J")
fail = []
# Energies in the ratio of CPU time: when the two jobs had the CPUs (the
# idle baseline, shared by allocation, is then negligible).
had = (a["cpu"] + b["cpu"]) / (a["busy"][-1] - a["busy"][0])
print(f"the two jobs had {had * 100:.0f} % of the node's busy CPU time")
if not 2.4 < cpu_ratio < 3.6:
    fail.append("the weights did not give about 3:1")
if had >= 0.85 and abs(energy_ratio / cpu_ratio - 1) > 0.02:
    fail.append("energy ratio not within 2 % of the CPU ratio")
if had < 0.85:
    print("the ratio is not checked: other work had the CPUs too (the method charges them the idle baseline)")
# 20 W written: each 0.5 s step about 10 J, none off by a wrap (25 J, 50 W
# over 0.5 s); the job end's sample comes right after the last one (too
# short to judge).
full = a["dt"] > 0.25
power = a["steps"][full] / a["dt"][full]
if np.any(a["steps"] < 0) or np.any(np.abs(power - 20) > 8):
    fail.append(f"node power off 20 W (a wrap lost or counted twice?): {np.round(power, 1)}")
if np.nanmax(a["jobs"]) != 2:
    fail.append(f"a's sampler never saw both jobs in the ledger: ledger_jobs {a['jobs']}")
# The node's ledger, once both jobs left it: their shares (as their files
# end) are what it retired, and with the idle part they make the node's
# energy exactly; the node's energy is what the writer wrote meanwhile
# (20 W from its clock: within 2 %, the reads being 20 ms steps).
lines = [l.split("\t") for l in open(sys.argv[3]).read().splitlines()]
start = next(l for l in lines if l[0] == "start")
domain = next(l for l in lines if l[0] == "domain")
jobs_left = [l for l in lines if l[0] == "job"]
energy, idle, retired = float(domain[5]), float(domain[6]), float(domain[7])
seconds = (int(start[3]) - int(start[1])) / 1e9
total = a["share"] + b["share"]
print(f"ledger: node {energy:.3f} J over {seconds:.2f} s ({energy / seconds:.2f} W); jobs {total:.6f} J + "
      f"idle {idle:.6f} J = {total + idle:.6f} J; retired {retired:.6f} J")
if jobs_left:
    fail.append(f"jobs still in the ledger: {jobs_left}")
if abs(retired - total) > 1e-9 * energy:
    fail.append("the ledger retired other shares than the files end with")
if abs(total + idle - energy) > 1e-9 * energy:
    fail.append("the shares and the idle part do not make the node's energy exactly")
if abs(energy / seconds - 20) > 0.4:
    fail.append("the ledger's energy is not what was written")
if abs(a["summary"] - a["share"]) > 1e-6 * a["share"]:
    fail.append("the summary's job_energy_j is not the last share")
print("; ".join(fail) or "ok")
sys.exit(1 if fail else 0)
PYEOF
  echo "$output"
  [ "$status" -eq 0 ]
}
