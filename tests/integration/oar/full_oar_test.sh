#!/bin/bash
# colmet in a complete OAR 2.5.9 on this one machine (../shared/docs/oar-full-test.md):
# PostgreSQL, Almighty and its scheduler, bipbip/oarexec, the node sshd on port 6667,
# the cgroup JRM with perf_event and colmet's hooks and admission rule 16, both set
# up by hooks/oar/install.sh. A throw-away normal user submits with oarsub:
#   A  -t colmet                      a CPU workload     -> CPU time within 2% (see check_cpu)
#   B  -t colmet=perfhw:...,period=1  a CPU workload     -> the spec's events, task_clock within 2%
#   C  (no colmet type)               a CPU workload     -> no file at the collector
#   D  -t colmet, oardel while it runs                   -> sampler stopped, partial data stored
# and after every job the node is still Alive, and no sampler, pid file or job
# cgroup is left. Everything started is stopped by PID and every change undone
# (EXIT trap), also when a check fails.
# Needs root and Debian's OAR, PostgreSQL and openssh-server packages; exits 77 otherwise.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/oar_common.sh"

require_oar oar-server oar-server-pgsql oar-node oar-user oar-user-pgsql postgresql-15 openssh-server
[ -x /usr/sbin/sshd ] || skip "no /usr/sbin/sshd"
port_busy() { "$PY" -c 'import socket,sys; s=socket.socket(); sys.exit(0 if s.connect_ex(("127.0.0.1",int(sys.argv[1])))==0 else 1)' "$1"; }
if [ -s /var/run/oar-server.pid ] && kill -0 "$(cat /var/run/oar-server.pid)" 2>/dev/null; then
  skip "an OAR server is already running here (/var/run/oar-server.pid); not touching it"
fi
for p in 6666 6667; do port_busy $p && skip "port $p is in use: another OAR server or node sshd runs here"; done

trap run_cleanup EXIT
trap 'exit 143' TERM INT HUP   # a CTest timeout still undoes everything
T_START=$(date +%s)
make_workdir full
install_colmet
make_test_user "colfull$((RANDOM % 10000))"
ensure_perf_event
prepare_oar_cgroups
start_collector
write_colmet_conf
RUN=$WORK/run
COLMET_LOG=$WORK/colmet.log
OARLOG=/var/log/oar.log
[ -e "$OARLOG" ] || on_exit "rm -f '$OARLOG'"
OARLOG_START=$(stat -c %s "$OARLOG" 2>/dev/null || echo 0)
KNOWN=/var/lib/oar/.ssh/known_hosts
if [ -e "$KNOWN" ]; then cp -p "$KNOWN" "$WORK/known_hosts.orig"; on_exit "cat '$WORK/known_hosts.orig' > '$KNOWN'"
else on_exit "rm -f '$KNOWN'"; fi

dump_logs() {
  echo "--- oar.log (this run)"; tail -c +"$((OARLOG_START + 1))" "$OARLOG" 2>/dev/null | tail -150
  echo "--- colmet.log"; cat "$COLMET_LOG" 2>/dev/null
  echo "--- collector.log"; tail -40 "$WORK/collector.log"
}
die() { fail "$*"; dump_logs; exit 1; }

# ------------------------------------------------------------ 1. PostgreSQL
PGDATA=/var/lib/postgresql/15/main
if ! pg_lsclusters -h 2>/dev/null | grep -q '^15 *main .*online'; then
  log "starting PostgreSQL 15/main"
  pg_ctlcluster 15 main start || die "pg_ctlcluster 15 main start"
  PG_PID=$(head -1 "$PGDATA/postmaster.pid")
  on_exit "kill -INT $PG_PID; for i in \$(seq 100); do kill -0 $PG_PID 2>/dev/null || break; sleep 0.1; done"
fi

# ------------------------------------------------------------ 2. oar.conf
cp -p /etc/oar/oar.conf "$WORK/oar.conf.orig"
on_exit "cat '$WORK/oar.conf.orig' > /etc/oar/oar.conf"
set_conf() { # set_conf KEY VALUE: the active line, else appended (inode and mode kept)
  local tmp; tmp=$(mktemp)
  KEY=$1 VALUE=$2 perl -0777 -pe '
    my ($k, $v) = ($ENV{KEY}, $ENV{VALUE});
    s/^[ \t]*\Q$k\E=.*$/$k="$v"/m or $_ .= "$k=\"$v\"\n";' /etc/oar/oar.conf > "$tmp"
  cat "$tmp" > /etc/oar/oar.conf; rm -f "$tmp"
}
set_conf DB_BASE_PASSWD oar
set_conf DB_BASE_PASSWD_RO oar_ro
set_conf LOG_LEVEL 3
set_conf SCHEDULER_MIN_TIME_BETWEEN_2_CALLS 0

# ------------------------------------------------------------ 3. database
if oar-database --check >/dev/null 2>&1; then
  log "an oar database exists (an earlier run?): recreating it"
  oar-database --drop --db-is-local -y >/dev/null 2>&1
fi
oar-database --create --db-is-local -y > "$WORK/db.log" 2>&1 || { cat "$WORK/db.log"; die "oar-database --create"; }
on_exit "oar-database --drop --db-is-local -y >/dev/null 2>&1"

# ------------------------------------------------------------ 4. admission rule 16 before colmet's change
run_user() { (cd "/home/$TUSER" && runuser -u "$TUSER" -- "$@"); }
out=$(run_user oarsub -t colmet -l core=1,walltime=0:01:00 true 2>&1)
rc=$?
check "before the install, -t colmet is refused by rule 16 (exit $rc)" grep -q "unknown job type: colmet" <<< "$out"

# ------------------------------------------------------------ 5. colmet's hooks
log "hooks/oar/install.sh"
bash "$SRC/hooks/oar/install.sh" --colmet-job "$PREFIX/sbin/colmet-job" --config "$CONF" \
  --run-dir "$RUN" --log-file "$COLMET_LOG" --state-dir "$WORK/state" || die "install.sh"
on_exit "bash '$SRC/hooks/oar/install.sh' --uninstall --state-dir '$WORK/state'"
check "JOB_RESOURCE_MANAGER_FILE names colmet's JRM copy" \
  grep -q '^JOB_RESOURCE_MANAGER_FILE="/etc/oar/job_resource_manager_cgroups_colmet.pl"' /etc/oar/oar.conf

# ------------------------------------------------------------ 6. node sshd
mkdir -p /run/sshd
/usr/sbin/sshd -f /etc/oar/sshd_config -o PidFile="$WORK/oar-node-sshd.pid" 2> "$WORK/sshd.log" ||
  { cat "$WORK/sshd.log"; die "sshd for the OAR node"; }
for i in $(seq 50); do [ -s "$WORK/oar-node-sshd.pid" ] && break; sleep 0.1; done
SSHD_PID=$(cat "$WORK/oar-node-sshd.pid")
on_exit "stop_pid $SSHD_PID"
runuser -u oar -- ssh -p 6667 -o BatchMode=yes localhost true || die "ssh -p 6667 localhost as oar"

# ------------------------------------------------------------ 7. resources
oarproperty -a host -c >/dev/null && oarproperty -a cpu >/dev/null && oarproperty -a core >/dev/null ||
  die "oarproperty"
for c in 0 1; do
  oarnodesetting -a -h localhost -p host=localhost -p cpu=0 -p core=$c -p cpuset=$c >/dev/null ||
    die "oarnodesetting -a (core $c)"
done
oarnodesetting -s Alive -h localhost >/dev/null || die "oarnodesetting -s Alive"

# ------------------------------------------------------------ 8. Almighty
/usr/sbin/oar-server || die "oar-server"
ALMIGHTY=$(cat /var/run/oar-server.pid)
# Almighty stops its children on SIGTERM; then whatever is left of its session, by PID.
on_exit "stop_pid $ALMIGHTY 15; for p in \$(ps -o pid= -s $ALMIGHTY); do kill -9 \$p 2>/dev/null; done; rm -f /var/run/oar-server.pid"
for i in $(seq 100); do port_busy 6666 && break; sleep 0.1; done
port_busy 6666 || die "Almighty does not listen on 6666"
log "OAR is up ($(( $(date +%s) - T_START )) s)"

# ------------------------------------------------------------ 9. the jobs
submit() { # submit OARSUB-ARGS...: the job id
  local out
  out=$(run_user oarsub "$@" 2>&1)
  sed -n 's/^OAR_JOB_ID=\([0-9]*\)$/\1/p' <<< "$out" | grep . || { echo "oarsub $*: $out" >&2; return 1; }
}
state() { oarstat -s -j "$1" 2>/dev/null | sed -n "s/^$1: //p"; }
# node_alive: every resource of localhost is Alive (oarnodes -s: "localhost", then
# "    <id> : <state>"). A Suspected node stays so; a query can fail under load,
# so it is asked up to 5 times.
node_alive() {
  local out k
  for k in 1 2 3 4 5; do
    out=$(oarnodes -s 2>&1)
    if grep -qE '^ *[0-9]+ : Alive$' <<< "$out" && ! grep -vE '^ *[0-9]+ : Alive$|^localhost$|^ *$' <<< "$out" | grep -q .; then
      return 0
    fi
    sleep 1
  done
  echo "oarnodes -s: $out"
  return 1
}
# The job, printing on its stdout: the wall-clock times start_ns and end_ns
# around a CPU workload run 1.5 s clear of OAR's own start and end;
# colmet-cputime's line (the workload's whole-life CPU time); the script's own
# whole life so far with bash `times` (itself and its reaped children, the
# workload included); and the CPU time the kernel counted for the whole job
# cgroup so far.
workload="/home/$TUSER/job.sh"
cat > "$workload" <<EOF
#!/bin/bash
sleep 1.5
echo "start_ns=\$(date +%s%N)"
$PREFIX/bin/colmet-cputime -- $PREFIX/bin/colmet-workload --cpu-seconds "\$1" 2>&1 || exit
echo "end_ns=\$(date +%s%N)"
sleep 1.5
cg=\$(sed -n 's/^[0-9]*:cpuacct:\(.*\)\$/\1/p' /proc/self/cgroup)
times
read -r ns < /sys/fs/cgroup/cpuacct\$cg/cpuacct.usage
echo "job_cgroup_cpu_ns=\$ns"
EOF
chmod 755 "$workload"
SPEC="perfhw:task_clock,page_faults,period=1"

JA=$(submit -t colmet -n colmet_probe --project physics -O "/home/$TUSER/OAR.%jobid%.stdout" -E "/home/$TUSER/OAR.%jobid%.stderr" -l core=1,walltime=0:05:00 "$workload 3") || die "oarsub -t colmet"
JB=$(submit -t "colmet=$SPEC" -l core=1,walltime=0:05:00 "$workload 2") || die "oarsub -t colmet=$SPEC"
JC=$(submit -l core=1,walltime=0:05:00 "$workload 1") || die "oarsub without colmet"
JD=$(submit -t colmet -l core=1,walltime=0:05:00 "$workload 100") || die "oarsub -t colmet (to oardel)"
log "jobs: A=$JA (colmet) B=$JB (colmet=$SPEC) C=$JC (no type) D=$JD (colmet, oardel)"

declare -A DONE=()
deleted=0
deadline=$(( $(date +%s) + 240 ))
while [ ${#DONE[@]} -lt 4 ] && [ "$(date +%s)" -lt "$deadline" ]; do
  for j in $JA $JB $JC $JD; do
    [ -n "${DONE[$j]:-}" ] && continue
    s=$(state "$j")
    case $s in
      Terminated|Error)
        DONE[$j]=$s
        log "job $j: $s"
        check "node still Alive after job $j" node_alive ;;
    esac
  done
  # D: once it runs and its sampler has sent a few samples, oardel it.
  if [ "$deleted" -eq 0 ] && [ "$(state "$JD")" = Running ] && [ -e "$RUN/$JD.pid" ]; then
    sleep 3
    D_PID=$(sed -n 's/^pid=//p' "$RUN/$JD.pid")
    log "job $JD: oardel (sampler pid $D_PID)"
    run_user oardel "$JD" >/dev/null 2>&1 || fail "oardel $JD"
    deleted=1
  fi
  sleep 0.5
done
[ ${#DONE[@]} -eq 4 ] || die "jobs not finished within 240 s: $(for j in $JA $JB $JC $JD; do echo -n "$j=$(state "$j") "; done)"
log "all jobs done ($(( $(date +%s) - T_START )) s)"
oarnodes -s

for j in $JA $JB $JC; do check "job $j Terminated (${DONE[$j]})" [ "${DONE[$j]}" = Terminated ]; done
check "job $JD was deleted while running" [ "$deleted" -eq 1 ]
check "node Alive at the end" node_alive
sleep 1
for j in $JA $JB $JC $JD; do
  check "job $j: no sampler left" [ -z "$(sampler_pids "$j")" ]
  check "job $j: no pid file left" [ ! -e "$RUN/$j.pid" ]
  check "job $j: no job cgroup left $(job_leftovers "${TUSER}_$j" | tr '\n' ' ')" [ -z "$(job_leftovers "${TUSER}_$j")" ]
done
[ -z "${D_PID:-}" ] || check "job $JD: its sampler (pid $D_PID) is stopped" gone "$D_PID"

# ------------------------------------------------------------ 10. the data
stop_pid "$COLLECTOR_PID"
job_value() { # job_value JOB KEY: KEY=VALUE from job JOB's stdout
  sed -n "s/^$2=\\([0-9]*\\)\$/\\1/p" "/home/$TUSER/OAR.$1.stdout" 2>/dev/null
}
# check_cpu JOB WHAT BACKEND METRIC: colmet's figure for the job cgroup (the
# last value of BACKEND/METRIC, and its time series) against the job's CPU
# times. The cgroup holds more than the job script: OAR's sshd session,
# oarsh_shell, oarexec and oarexecuser (perl), about 0.1 s of CPU here, which
# no process of the job can measure over their whole lives. So:
#  - the series' growth over the workload (from the last sample at least
#    100 ms before start_ns to the first one at or after end_ns), while OAR's
#    processes only wait, is held to CPU_PCT of the workload's whole-life CPU
#    time from colmet-cputime (the script's `date` in that window: 2 ms);
#  - the last value covers the script's whole life (bash `times`) to CPU_PCT:
#    nothing of the job is lost at its end;
#  - the last value exceeds the job cgroup's CPU time read when the script
#    ended by OAR's wind-down after it (oarexec reporting to Almighty, the
#    exits; about 10 ms here): within 10 %, a sanity bound only, as that part
#    has no truth the test can measure.
check_cpu() {
  local j=$1 what=$2 backend=$3 metric=$4 work script total start end v grown
  work=$(cputime_of "/home/$TUSER/OAR.$j.stdout" 2>/dev/null)
  script=$(times_total "/home/$TUSER/OAR.$j.stdout" 2>/dev/null)
  total=$(job_value "$j" job_cgroup_cpu_ns)
  start=$(job_value "$j" start_ns)
  end=$(job_value "$j" end_ns)
  check "job $j: the job printed its CPU times and the workload's start and end" \
    [ -n "$work" -a -n "$script" -a -n "$total" -a -n "$start" -a -n "$end" ]
  [ -n "$work" ] && [ -n "$script" ] && [ -n "$total" ] && [ -n "$start" ] && [ -n "$end" ] || return 0
  total=$(awk -v n="$total" 'BEGIN { printf "%.9f", n / 1e9 }')
  v=$(h5 "$F" "last('$backend', '$metric')")
  grown=$(h5 "$F" "after('$backend', '$metric', $end) - before('$backend', '$metric', $start - 100000000)")
  log "job $j: whole-life CPU of the workload $work s, of the job script $script s; job cgroup $total s when the script ended; colmet's $what $grown s over the workload, $v s in all"
  check "job $j: $what over the workload ($grown s) within $CPU_PCT% of its whole-life CPU time ($work s)" \
    within_pct "$grown" "$work" "$CPU_PCT"
  check "job $j: $what ($v s) covers the script's whole-life CPU time ($script s) to $CPU_PCT%" \
    at_least "$v" "$(awk -v u="$script" -v p="$CPU_PCT" 'BEGIN { print u * (1 - p / 100) }')"
  check "job $j: $what ($v s) within 10% of the job cgroup's CPU time when the script ended ($total s)" \
    within_pct "$v" "$total" 10
}
for j in $JA $JB; do
  F=$WORK/h5/$j.h5
  check "job $j: the collector stored $F" [ -f "$F" ]
  [ -f "$F" ] || continue
  check_cpu "$j" "cgroup CPU time" cgroup_cpu usage
  cpu=$(h5 "$F" 'float(f["summary"].attrs["cpu_time_s"])')
  check "job $j: the summary's cpu_time_s ($cpu s) is the last cgroup CPU time" \
    [ "$cpu" = "$(h5 "$F" 'last("cgroup_cpu", "usage")')" ]
  check "job $j: user $TUSER" [ "$(h5 "$F" 'attr("user")')" = "$TUSER" ]
done
# The job's context, as OAR's JRM hands it over (oarsub -n, --project, walltime, core=1).
F=$WORK/h5/$JA.h5
context=$([ -f "$F" ] && h5 "$F" '"|".join(str(f["hosts"][host].attrs.get(k, "-")) for k in ("job_name", "project", "time_limit_s", "job_nodes", "job_cpus"))' 2>&1)
check "job $JA: its context from OAR, name|project|walltime|nodes|CPUs ($context)" \
  [ "$context" = "colmet_probe|physics|300|1|1" ]
F=$WORK/h5/$JB.h5
if [ -f "$F" ]; then
  events=$(h5 "$F" '",".join(names("perfhw"))')
  log "job $JB: perfhw metrics $events; spec $(h5 "$F" 'attr("colmet_spec")')"
  check "job $JB: the spec's events are stored" grep -qE '(^|,)task_clock(,|$)' <<< "$events"
  check "job $JB: page_faults stored" grep -qE '(^|,)page_faults(,|$)' <<< "$events"
  check_cpu "$JB" "perfhw task_clock" perfhw task_clock
  p=$(h5 "$F" 'period("perfhw")')
  check "job $JB: sampled every 1 s, the spec's period ($p s)" [ "$p" = 1.0 ]
fi
check "job $JC (no colmet type): no file at the collector" [ -z "$(ls "$WORK/h5" | grep "^$JC[.-]")" ]
F=$WORK/h5/$JD.h5
check "job $JD (oardel): the collector stored its partial data" [ -f "$F" ]
if [ -f "$F" ]; then
  n=$(h5 "$F" 'int(attr("samples_received"))')
  cpu=$(h5 "$F" 'float(f["summary"].attrs["cpu_time_s"])')
  log "job $JD: $n samples, cpu_time_s $cpu s before oardel"
  check "job $JD: several samples stored ($n)" [ "${n:-0}" -ge 3 ]
  check "job $JD: some CPU time stored ($cpu s)" at_least "$cpu" 0.5
  check "job $JD: the job end arrived (sampler stopped cleanly)" [ "$(h5 "$F" '"job_end_ns" in f["hosts"][host].attrs')" = True ]
fi

log "the JRM's colmet lines in oar.log: $(tail -c +"$((OARLOG_START + 1))" "$OARLOG" | grep -c 'colmet: ')"
log "total $(( $(date +%s) - T_START )) s"
if [ "$FAILS" -ne 0 ]; then
  dump_logs
  echo "FAILED: $FAILS check(s)"
  exit 1
fi
echo "PASSED"
