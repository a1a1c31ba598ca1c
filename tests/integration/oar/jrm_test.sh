#!/bin/bash
# colmet's OAR hooks in the real OAR 2.5.9 job resource manager, without Almighty
# (docs: ../shared/docs/oar.md 11.4, "Option B"). hooks/oar/install.sh installs the
# hooks into a scratch copy of /etc/oar; the JRM copy it writes then runs `init` and
# `clean` exactly as bipbip and OAR::IO start it on a node: as user oar, through
# oar's login shell oarsh_shell (PATH with oardodo), `TAKTUK_HOSTNAME=<node> perl - init`
# with the script, __END__ and the job's Data::Dumper hash on stdin. Between init and
# clean a CPU workload runs in the job's cgroups as the job user, started through
# oarsh_shell with OAR_CPUSET / OAR_JOB_USER as OAR starts job processes.
#
# Checks: the JRM exits 0 both times; the collector stored the job with the spec's
# perf events, cpu_time between the job's CPU time inside its cgroups and its whole life's (2% each way) and task_clock
# between the workload's and the job's whole-life CPU time
# (the job shell's bash `times`, the workload's whole life from colmet-cputime in it);
# after clean no sampler, pid file or job cgroup remains; specs that try to inject
# shell code or colmet-job options run nothing and the job is still sampled; a job
# without the type gets no sampler; the prologue/epilogue pair (install.sh
# --prologue-epilogue) starts and stops a sampler too; --uninstall restores oar.conf.
# The perf_event v1 hierarchy is mounted when absent and left mounted; everything
# else the test creates (user, links, cgroups, files) is removed on exit.
# Needs root and Debian's oar-server and oar-node; exits 77 (skipped) otherwise.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/oar_common.sh"

require_oar oar-server oar-node oar-common
trap run_cleanup EXIT
trap 'exit 143' TERM INT HUP   # a CTest timeout still undoes everything

make_workdir jrm
install_colmet
make_test_user "coljrm$((RANDOM % 10000))"
ensure_perf_event
prepare_oar_cgroups
start_collector
write_colmet_conf

RUN=$WORK/run
COLMET_LOG=$WORK/colmet.log
CPU_S=3

# The hooks, installed by the project's script into a scratch /etc/oar.
ETC=$WORK/etc
mkdir -p "$ETC"
cp -p /usr/share/oar/oar-server/job_resource_manager_cgroups.pl /etc/oar/oar.conf "$ETC/"
log "install.sh"
bash "$SRC/hooks/oar/install.sh" --etc-dir "$ETC" --state-dir "$WORK/state" --no-admission-rule \
  --colmet-job "$PREFIX/sbin/colmet-job" --config "$CONF" --run-dir "$RUN" --log-file "$COLMET_LOG" ||
  { fail "install.sh"; exit 1; }
JRM=$(sed -n 's/^JOB_RESOURCE_MANAGER_FILE="\(.*\)"$/\1/p' "$ETC/oar.conf")
check "install.sh points JOB_RESOURCE_MANAGER_FILE at its JRM copy" [ "$JRM" = "$ETC/job_resource_manager_cgroups_colmet.pl" ]
check "the JRM copy has perf_event enabled" grep -q '^my $Enable_perf_event_cg = "YES";' "$JRM"

# hash JOBID TYPES_PERL: the job's $Cpuset hash as bipbip sends it (Terse Data::Dumper).
hash() {
  JOBID=$1 JUSER=$TUSER TYPES=$2 perl -MData::Dumper -e '
    $Data::Dumper::Terse = 1;
    my $types = eval($ENV{TYPES}); die $@ if $@;
    my $name = "$ENV{JUSER}_$ENV{JOBID}";
    print Dumper({
      job_id => $ENV{JOBID}, name => $name, cpuset_path => "/oar",
      nodes => { localhost => ["0", "1"] }, types => $types,
      user => $ENV{JUSER}, job_user => $ENV{JUSER}, oar_tmp_directory => "/var/lib/oar",
      ssh_keys => { public => { file_name => "/var/lib/oar/.ssh/authorized_keys", key => "" },
                    private => { file_name => "/var/lib/oar/$name.jobkey", key => "" } },
      resources => [ { type => "default", network_address => "localhost", resource_id => 1, cpuset => 0 },
                     { type => "default", network_address => "localhost", resource_id => 2, cpuset => 1 } ],
      node_file_db_fields => "network_address", node_file_db_fields_distinct_values => "resource_id",
      array_id => $ENV{JOBID}, array_index => 1, stdout_file => "OAR.%jobid%.stdout",
      stderr_file => "OAR.%jobid%.stderr", launching_directory => "/tmp", job_name => "probe\tjob\n",
      walltime_seconds => 300, walltime => "0:05:00", project => "default", log_level => 3,
    });'
}

# jrm ACTION JOBID TYPES_PERL: run the JRM like OAR's server does; its exit status.
jrm() {
  local action=$1 job=$2 types=$3 rc
  { cat "$JRM"; echo "__END__"; hash "$job" "$types"; } |
    runuser -u oar -- env -i HOME=/var/lib/oar PATH=/usr/local/bin:/usr/bin:/bin USER=oar LOGNAME=oar \
      /usr/lib/oar/oarsh_shell -c "TAKTUK_HOSTNAME=localhost perl - $action" >> "$WORK/jrm.log" 2>&1
  rc=$?
  echo "--- jrm $action $job: exit $rc" >> "$WORK/jrm.log"
  return "$rc"
}

# in_job JOBID CMD: CMD as the job user inside the job's cgroups, as oarsh_shell does.
in_job() {
  local job=$1; shift
  runuser -u oar -- env -i HOME=/var/lib/oar PATH=/usr/bin:/bin USER=oar LOGNAME=oar \
    OAR_CPUSET="/oar/${TUSER}_$job" OAR_JOB_USER="$TUSER" /usr/lib/oar/oarsh_shell -c "$*"
}

record_pid() { sed -n 's/^pid=//p' "$RUN/$1.pid" 2>/dev/null; }

# ------------------------------------------------------------------ the job
JOB=$((100000 + RANDOM))
NAME=${TUSER}_$JOB
SPEC="perfhw:task_clock,page_faults,period=0.5"
log "job $JOB: JRM init (types colmet=$SPEC)"
t0=$(date +%s%N)
jrm init "$JOB" "{ colmet => '$SPEC' }"
rc=$?
t1=$(date +%s%N)
check "JRM init exits 0" [ "$rc" -eq 0 ]
log "JRM init took $(( (t1 - t0) / 1000000 )) ms"
pid=$(record_pid "$JOB")
check "init started a sampler (pid file $RUN/$JOB.pid)" [ -n "$pid" ]
if [ -n "$pid" ]; then
  check "the sampler runs" kill -0 "$pid"
  check "the sampler is in no job cgroup" bash -c "! grep -q '/oar/' /proc/$pid/cgroup"
  check "the sampler got the spec's events" grep -q -- "--perfhw-list task_clock,page_faults" <(tr '\0' ' ' < "/proc/$pid/cmdline")
fi
check "the JRM made the job's perf_event cgroup" [ -d "$CGROOT/perf_event/oar/$NAME" ]

log "job $JOB: $CPU_S s of CPU as $TUSER in the job's cgroups"
# The job's cgroups hold one process tree: oarsh_shell adds itself and its
# parent (runuser) and, through oardodo, becomes the job user's bash, which
# runs the workload under colmet-cputime between two `times`. Two truths,
# both from outside the workload: the shell's whole life (its own time and
# its reaped children's: oardodo helpers, cat, colmet-cputime, whose figure
# has the workload's whole life), which also holds the shell's start before
# it joined the cgroups (runuser's PAM session, the first helpers: up to 2 %
# of 3 s on a loaded VM); and what it used between the two `times`, all of
# it inside the cgroups, which leaves out the shell's start after it joined
# them (some 70 ms). The cgroups' figure lies between the two.
in_job "$JOB" "times; cat /proc/self/cgroup > /tmp/colmet-jrm-cgroups.$JOB; $PREFIX/bin/colmet-cputime -- $PREFIX/bin/colmet-workload --cpu-seconds $CPU_S 2>&1; times" \
  > "$WORK/job.out"
cat "$WORK/job.out"
WORKLOAD_CPU=$(cputime_of "$WORK/job.out" 2>/dev/null)
CPU_USED=$(times_total "$WORK/job.out" 2>/dev/null)
CPU_INSIDE=$(times_span "$WORK/job.out" 2>/dev/null)
check "the job reported its CPU time (workload $WORKLOAD_CPU s, whole job $CPU_USED s)" [ -n "$CPU_USED" -a -n "$WORKLOAD_CPU" ]
CPU_USED=${CPU_USED:-$CPU_S}
check "the workload ran as the job user" [ "$(stat -c %U "/tmp/colmet-jrm-cgroups.$JOB" 2>/dev/null)" = "$TUSER" ]
check "the workload ran in the job's perf_event cgroup" grep -q ":perf_event:/oar/$NAME\$" "/tmp/colmet-jrm-cgroups.$JOB"
sleep 1

log "job $JOB: JRM clean"
jrm clean "$JOB" "{ colmet => '$SPEC' }"
check "JRM clean exits 0" [ $? -eq 0 ]
check "the JRM clean deleted the job user's files in /tmp (so a throw-away user)" [ ! -e "/tmp/colmet-jrm-cgroups.$JOB" ]
check "no pid file after clean" [ ! -e "$RUN/$JOB.pid" ]
check "no sampler after clean" [ -z "$(sampler_pids "$JOB")" ]
[ -z "${pid:-}" ] || check "the sampler process is gone" gone "$pid"
check "no job cgroup after clean: $(job_leftovers "$NAME" | tr '\n' ' ')" [ -z "$(job_leftovers "$NAME")" ]
check "colmet-job logged the stop" grep -q "job $JOB: sampler (pid [0-9]*) stopped" "$COLMET_LOG"

# ------------------------------------------------------------------ hostile specs
# Shell metacharacters: refused by the hook's whitelist (sampled with the
# defaults); an option-looking spec: one --spec=... argument, refused by colmet-job.
EVIL=$WORK/evil.sh
printf '#!/bin/sh\ntouch %s/pwned\n' "$WORK" > "$EVIL"
chmod 755 "$EVIL"
n=0
for spec in "perfhw\$(touch $WORK/pwned)" "perfhw;touch $WORK/pwned" "--node-binary=$EVIL" "x' . system('touch $WORK/pwned') . '"; do
  n=$((n + 1))
  job=$((JOB + n))
  log "job $job: JRM init with spec $spec"
  types=$(SPEC=$spec perl -MData::Dumper -e '$Data::Dumper::Terse = 1; print Dumper({ colmet => $ENV{SPEC} })')
  jrm init "$job" "$types"
  check "hostile spec $n: JRM init exits 0" [ $? -eq 0 ]
  p=$(record_pid "$job")
  check "hostile spec $n: the job is still sampled (with the defaults)" [ -n "$p" ]
  [ -n "$p" ] && check "hostile spec $n: ...by colmet-node itself" grep -q "colmet-node" <(tr '\0' ' ' < "/proc/$p/cmdline")
  jrm clean "$job" "$types"
  check "hostile spec $n: JRM clean exits 0" [ $? -eq 0 ]
  check "hostile spec $n: no pid file left" [ ! -e "$RUN/$job.pid" ]
  check "hostile spec $n: no job cgroup left" [ -z "$(job_leftovers "${TUSER}_$job")" ]
done
check "no hostile spec ran a command" [ ! -e "$WORK/pwned" ]
check "colmet-job logged the refused option-looking spec" grep -q "ignoring colmet spec '--node-binary=" "$COLMET_LOG"

# A job without the colmet type: no sampler.
job=$((JOB + 10))
jrm init "$job" "{ besteffort => 'true' }"
check "job without the type: JRM init exits 0" [ $? -eq 0 ]
check "job without the type: no sampler" [ ! -e "$RUN/$job.pid" ]
jrm clean "$job" "{ besteffort => 'true' }"
check "job without the type: JRM clean exits 0" [ $? -eq 0 ]

# ------------------------------------------------------------------ prologue/epilogue
# The alternative pair, installed by install.sh --no-jrm --prologue-epilogue into
# a second scratch /etc/oar. The package's JRM (no colmet hooks) makes the job's
# cgroups; the prologue and epilogue run as oar inside them, as oarexec runs them
# (oarsh_shell with OAR_CPUSET), with the job id, user and node file as arguments.
# oarstat is replaced by a stub that prints the job's types and context as
# `oarstat -f -J` does (OAR::Stat::get_job_data's keys; a newline in the name).
ETC2=$WORK/etc2
mkdir -p "$ETC2" "$WORK/fakebin"
cp -p /etc/oar/oar.conf "$ETC2/"
bash "$SRC/hooks/oar/install.sh" --etc-dir "$ETC2" --state-dir "$WORK/state2" --no-jrm --no-admission-rule \
  --prologue-epilogue --colmet-job "$PREFIX/sbin/colmet-job" --config "$CONF" --run-dir "$RUN" \
  --log-file "$COLMET_LOG" >/dev/null || fail "install.sh --prologue-epilogue"
cat > "$WORK/fakebin/oarstat" <<'EOF'
#!/bin/sh
# oarstat -f -J -j ID
[ "$1 $2 $3" = "-f -J -j" ] || exit 3
printf '{"%s":{"Job_Id":%s,"name":"probe\\njob","queue":"default","project":"physics","walltime":300,' "$4" "$4"
printf '"submissionTime":1765000000,"startTime":1765000042,"assigned_resources":[1,2],'
printf '"assigned_network_address":["localhost"],"state":"Launching","types":["besteffort","colmet=perfhw:task_clock,page_faults"]}}\n'
EOF
chmod 755 "$WORK/fakebin/oarstat"
PJOB=$((JOB + 20))
PNAME=${TUSER}_$PJOB
as_oarexec() { # as_oarexec JOBID CMD: CMD as oar inside the job's cgroups (like oarexec)
  local job=$1; shift
  runuser -u oar -- env -i HOME=/var/lib/oar PATH="$WORK/fakebin:/usr/bin:/bin" USER=oar LOGNAME=oar \
    OAR_CPUSET="/oar/${TUSER}_$job" /usr/lib/oar/oarsh_shell -c "$*"
}
PKG_JRM=$JRM
JRM=/usr/share/oar/oar-server/job_resource_manager_cgroups.pl
# A site that does not change the JRM has no perf_event link: hide the one the
# hooked JRM made above, so that colmet-job makes the job's perf_event cgroup.
mv "$LINKS/perf_event" "$WORK/perf_event.link"
on_exit "if [ -e '$WORK/perf_event.link' ]; then mv '$WORK/perf_event.link' '$LINKS/perf_event'; fi"
jrm init "$PJOB" "{ colmet => 'perfhw:task_clock,page_faults' }"
check "prologue job: the package's JRM init exits 0" [ $? -eq 0 ]
check "prologue job: the package's JRM starts no sampler" [ ! -e "$RUN/$PJOB.pid" ]
check "prologue job: and makes no perf_event cgroup" [ ! -d "$CGROOT/perf_event/oar/$PNAME" ]
# oarexec's stand-in: in the job's cgroups before the prologue, it starts the
# job's work once the sampler runs and stays until the JRM clean kills it.
# The work starts 2 s after the sampler, once the prologue is over. The
# stand-in's bash brackets it with `times` (its own CPU and its reaped
# children's: date, colmet-cputime and the workload, touch) and notes the time
# (start_ns) after the first, all in the file colmet-cputime appends to.
in_job "$PJOB" "while [ ! -e $RUN/$PJOB.pid ]; do sleep 0.1; done; sleep 2; times > /tmp/colmet-jrm-cputime.$PJOB; echo start_ns=\$(date +%s%N) >> /tmp/colmet-jrm-cputime.$PJOB; $PREFIX/bin/colmet-cputime --output /tmp/colmet-jrm-cputime.$PJOB -- $PREFIX/bin/colmet-workload --cpu-seconds 1 > /dev/null; touch /tmp/colmet-jrm-done.$PJOB; times >> /tmp/colmet-jrm-cputime.$PJOB; exec sleep 300" &
STAND_IN=$!
for i in $(seq 50); do pgrep -u "$TUSER" -x bash >/dev/null && break; sleep 0.1; done
as_oarexec "$PJOB" "$ETC2/colmet_prologue $PJOB $TUSER /var/lib/oar/$PJOB"
check "prologue exits 0" [ $? -eq 0 ]
ppid_=$(record_pid "$PJOB")
check "the prologue started a sampler" [ -n "$ppid_" ]
if [ -n "$ppid_" ]; then
  check "the prologue's sampler is in no job cgroup" bash -c "! grep -q '/oar/' /proc/$ppid_/cgroup"
  check "the prologue's sampler got the spec's events" grep -q -- "--perfhw-list task_clock,page_faults" <(tr '\0' ' ' < "/proc/$ppid_/cmdline")
fi
check "colmet-job made the job's perf_event cgroup" [ -d "$CGROOT/perf_event/oar/$PNAME" ]
for i in $(seq 150); do [ -e "/tmp/colmet-jrm-done.$PJOB" ] && break; sleep 0.1; done
check "the job's work ran" [ -e "/tmp/colmet-jrm-done.$PJOB" ]
P_CPU=$(cputime_of "/tmp/colmet-jrm-cputime.$PJOB" 2>/dev/null)   # before the JRM clean deletes it
P_SPAN=$(times_span "/tmp/colmet-jrm-cputime.$PJOB" 2>/dev/null)
P_START=$(sed -n 's/^start_ns=\([0-9]*\)$/\1/p' "/tmp/colmet-jrm-cputime.$PJOB" 2>/dev/null)
check "prologue job: the workload's whole-life CPU time ($P_CPU s), the stand-in's over the work ($P_SPAN s) and start ($P_START)" \
  [ -n "$P_CPU" -a -n "$P_SPAN" -a -n "$P_START" ]
stand_in=$(cat "$CGROOT/perf_event/oar/$PNAME/cgroup.procs" 2>/dev/null | head -1)
check "oarexec's stand-in was moved into the job's perf_event cgroup" [ -n "$stand_in" ]
sleep 1
as_oarexec "$PJOB" "$ETC2/colmet_epilogue $PJOB $TUSER /var/lib/oar/$PJOB"
check "epilogue exits 0" [ $? -eq 0 ]
check "the epilogue stopped the sampler" [ ! -e "$RUN/$PJOB.pid" ]
PF="$WORK/h5/$PJOB.h5"
for i in $(seq 50); do [ -f "$PF" ] && h5 "$PF" 'attr("queue")' >/dev/null 2>&1 && break; sleep 0.1; done
check "prologue job: the job's context from oarstat -f -J: name, queue, project, walltime, times, nodes, CPUs" \
  [ "$(h5 "$PF" '"|".join(attr(k) for k in ("job_name", "queue", "project", "time_limit_s", "submit_time", "start_time", "job_nodes", "job_cpus"))' 2>&1)" = "probe job|default|physics|300|1765000000|1765000042|1|2" ]
[ -z "$ppid_" ] || check "the prologue's sampler is gone" gone "$ppid_"
check "the epilogue removed the busy perf_event cgroup colmet-job made" [ ! -d "$CGROOT/perf_event/oar/$PNAME" ]
jrm clean "$PJOB" "{ colmet => 'perfhw:task_clock,page_faults' }"
check "prologue job: JRM clean exits 0" [ $? -eq 0 ]
wait "$STAND_IN" 2>/dev/null   # killed by the JRM clean
check "prologue job: no job cgroup left $(job_leftovers "$PNAME" | tr '\n' ' ')" [ -z "$(job_leftovers "$PNAME")" ]
mv "$WORK/perf_event.link" "$LINKS/perf_event"
bash "$SRC/hooks/oar/install.sh" --uninstall --state-dir "$WORK/state2" >/dev/null || fail "install.sh --uninstall (prologue)"
check "uninstall restored the scratch oar.conf" cmp -s /etc/oar/oar.conf "$ETC2/oar.conf"
check "uninstall removed the prologue and epilogue" [ ! -e "$ETC2/colmet_prologue" -a ! -e "$ETC2/colmet_epilogue" ]
JRM=$PKG_JRM

check "no sanitizer report from colmet-job in the JRM's output" bash -c "! grep -qE 'Sanitizer|runtime error:' '$WORK/jrm.log'"

# ------------------------------------------------------------------ the data
stop_pid "$COLLECTOR_PID"
check "no sanitizer report from the collector" bash -c "! grep -qE 'Sanitizer|runtime error:' '$WORK/collector.log'"
F=$WORK/h5/$JOB.h5
check "the collector stored $F" [ -f "$F" ]
if [ -f "$F" ]; then
  task=$(h5 "$F" 'last("perfhw", "task_clock")')
  cpu=$(h5 "$F" 'float(f["summary"].attrs["cpu_time_s"])')
  log "job's whole-life CPU $CPU_USED s, inside its cgroups ${CPU_INSIDE:-?} s (workload ${WORKLOAD_CPU:-?} s); perfhw task_clock $task s; summary cpu_time_s $cpu s"
  # perf_event is the last hierarchy oarsh_shell's processes join: the
  # job's start before that (runuser's PAM session, the first oardodo
  # helpers) is in the whole-life truth but not in task_clock. Measured on
  # a 2026-12-04 VM: 64-74 ms of 3.2 s, 2.0-2.3 %. So task_clock must hold
  # all of the workload's whole life (colmet-cputime, all spent inside the
  # cgroups) and no more than the job's.
  check "perfhw task_clock ($task s) between the workload's whole-life CPU ($WORKLOAD_CPU s) and the job's ($CPU_USED s), $CPU_PCT% each way" \
    between_pct "$task" "${WORKLOAD_CPU:-$CPU_USED}" "$CPU_USED" "$CPU_PCT"
  check "cpu_time_s ($cpu s) between the job's CPU time inside its cgroups ($CPU_INSIDE s) and its whole life's ($CPU_USED s), $CPU_PCT% each way" \
    between_pct "$cpu" "${CPU_INSIDE:-$CPU_USED}" "$CPU_USED" "$CPU_PCT"
  check "page_faults stored" [ "$(h5 "$F" '"page_faults" in names("perfhw")')" = True ]
  check "the user is $TUSER" [ "$(h5 "$F" 'attr("user")')" = "$TUSER" ]
  check "the cgroup is /oar/$NAME" [ "$(h5 "$F" 'attr("cgroup")')" = "/oar/$NAME" ]
  # The job's context from the JRM's hash (a tab and a newline in its name).
  check "the job's context: name, project, walltime, nodes and CPUs" \
    [ "$(h5 "$F" '"|".join(attr(k) for k in ("job_name", "project", "time_limit_s", "job_nodes", "job_cpus"))')" = "probe job|default|300|1|2" ]
  stored_spec=$(h5 "$F" 'attr("colmet_spec")')
  check "the spec is stored ($stored_spec)" grep -q "perfhw:task_clock,page_faults" <<< "$stored_spec"
fi
[ ! -f "$WORK/h5/$((JOB + 10)).h5" ] || fail "a file for the job without the colmet type"
F=$WORK/h5/$PJOB.h5
check "prologue job: the collector stored $F" [ -f "$F" ]
if [ -f "$F" ]; then
  # colmet-job start moves every process of the job's cgroups into the
  # perf_event cgroup it makes: the stand-in's bash, and also the prologue's
  # own chain (runuser, oarsh_shell, the prologue, colmet-job start itself),
  # whose CPU from the move to its exit no job process can measure. So the
  # figure compared is task_clock's growth from the last sample at least
  # 100 ms before the work started (the prologue ended over 1.5 s earlier) to
  # the end. It must hold the workload's whole life (colmet-cputime's figure)
  # and no more than what the stand-in's bash and its children used between
  # its two `times` (the workload plus the shell's forks, date and touch: 15-25 ms
  # on a 2026-12-05 VM, too much to leave out of a 2 % check of 1 s). Left
  # out: `exec sleep 300` after the last `times`, a few ms.
  task=$(h5 "$F" 'last("perfhw", "task_clock")')
  base=$(h5 "$F" "before('perfhw', 'task_clock', ${P_START:-0} - 100000000)")
  grown=$("$PY" -c 'import sys; print(float(sys.argv[1]) - float(sys.argv[2]))' "$task" "$base")
  log "prologue job: workload's whole-life CPU ${P_CPU:-?} s, the stand-in's over the work ${P_SPAN:-?} s; perfhw task_clock $base s before it, $task s at the end"
  check "prologue job: perfhw task_clock's growth over the work ($grown s) between the workload's whole-life CPU time (${P_CPU:-?} s) and the stand-in's over the work (${P_SPAN:-?} s), $CPU_PCT% each way" \
    between_pct "$grown" "${P_CPU:-1}" "${P_SPAN:-1}" "$CPU_PCT"
fi

# install.sh --uninstall of the JRM part gives back the scratch oar.conf byte for byte.
bash "$SRC/hooks/oar/install.sh" --uninstall --state-dir "$WORK/state" >/dev/null || fail "install.sh --uninstall"
check "uninstall restored oar.conf exactly" cmp -s /etc/oar/oar.conf "$ETC/oar.conf"
check "uninstall removed the JRM copy" [ ! -e "$ETC/job_resource_manager_cgroups_colmet.pl" ]
check "uninstall removed its state" [ ! -e "$WORK/state/install.env" ]

if [ "$FAILS" -ne 0 ]; then
  echo "--- jrm.log"; cat "$WORK/jrm.log"
  echo "--- colmet.log"; cat "$COLMET_LOG" 2>/dev/null
  echo "--- collector.log"; tail -50 "$WORK/collector.log"
  echo "FAILED: $FAILS check(s)"
  exit 1
fi
echo "PASSED"
