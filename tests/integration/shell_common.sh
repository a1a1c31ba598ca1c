# Shell helpers shared by the bats tests (helpers.bash), the OAR test
# scripts (oar/oar_common.sh) and the Slurm cluster test; sourced. The
# numeric checks need $PY.

# stop_pid PID [timeout_s]: SIGTERM and wait; SIGKILL after the timeout.
stop_pid() {
  local pid=$1 limit=${2:-10} i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < limit * 20; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 1
}

# wait_for_text FILE TEXT [SECONDS]: wait until FILE holds TEXT (a grep
# pattern), at most SECONDS (30); says what is missing when it gives up. For
# log lines a program writes on its own time: a fixed sleep is too short on
# a loaded machine (a sanitizer build on 2 busy cores).
wait_for_text() {
  local file=$1 text=$2 limit=${3:-30} i
  for ((i = 0; i < limit * 10; i++)); do
    grep -q -- "$text" "$file" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "not in $file after $limit s: $text"
  return 1
}

within_pct() {  # within_pct ACTUAL EXPECTED PCT
  "$PY" -c 'import sys; a,e,p=map(float,sys.argv[1:]); sys.exit(0 if abs(a-e) <= e*p/100 else 1)' "$1" "$2" "$3"
}

between_pct() {  # between_pct ACTUAL LOW HIGH PCT: LOW less PCT % <= ACTUAL <= HIGH plus PCT %
  "$PY" -c 'import sys; a,l,h,p=map(float,sys.argv[1:]); sys.exit(0 if l*(1-p/100) <= a <= h*(1+p/100) else 1)' \
    "$1" "$2" "$3" "$4"
}

at_least() {  # at_least ACTUAL MIN
  "$PY" -c 'import sys; a,m=map(float,sys.argv[1:]); sys.exit(0 if a >= m else 1)' "$1" "$2"
}

# CPU truth. A CPU check compares colmet's figure for a cgroup (cgroup CPU
# time, perf task_clock) with the WHOLE-LIFE CPU time of what ran in it, as a
# parent measures it (wait4's rusage: exit and teardown included), never with
# a workload's own getrusage(RUSAGE_SELF), which misses its teardown (4-8 %
# with 200 MiB to free). colmet-cputime wraps the command and gives that figure;
# a shell that also sits in the cgroup is measured with bash `times`, or kept
# out of the comparison. With that truth the checks hold to CPU_PCT percent.
CPU_PCT=2

# cputime_of FILE [KEY]: KEY (cpu_seconds unless given) of the last line
# colmet-cputime wrote to FILE (other lines, such as the command's, are skipped).
cputime_of() {
  "$PY" -c '
import json, sys
lines = [l for l in open(sys.argv[1]) if "\"wrapper_cpu_seconds\"" in l]
print(json.loads(lines[-1])[sys.argv[2]])' "$1" "${2:-cpu_seconds}"
}

# exec_truth FILE: for a command run as `sh -c 'move into the cgroup; exec
# colmet-cputime ... -- CMD'`, the bracket "LOW HIGH" of the cgroup's CPU
# time: at least CMD's whole life, at most that plus colmet-cputime's own
# process (whose RUSAGE_SELF also holds the shell's start before the move,
# outside the cgroup: ~1 ms natively, tens of ms in user-mode Linux).
exec_truth() {
  echo "$(cputime_of "$1" command_cpu_seconds) $(cputime_of "$1")"
}

# times_span FILE: the CPU time a bash and its reaped children used between
# the first and the last `times` output in FILE (the last sum minus the first).
times_span() {
  "$PY" -c '
import re, sys
t = re.compile(r"^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$")
rows = [t.match(l.strip()) for l in open(sys.argv[1])]
rows = [m for m in rows if m]
assert len(rows) >= 4, "no two bash times outputs"
total = lambda pair: sum(60 * float(m.group(i)) + float(m.group(i + 1)) for m in pair for i in (1, 3))
print("%.3f" % (total(rows[-2:]) - total(rows[:2])))' "$1"
}

# times_total FILE: the sum of the last bash `times` output in FILE (its two
# lines: the shell's own user and system time, then its reaped children's).
times_total() {
  "$PY" -c '
import re, sys
t = re.compile(r"^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$")
rows = [t.match(l.strip()) for l in open(sys.argv[1])]
rows = [m for m in rows if m][-2:]
assert len(rows) == 2, "no bash times output"
print("%.3f" % sum(60 * float(m.group(i)) + float(m.group(i + 1)) for m in rows for i in (1, 3)))' "$1"
}

# free_port: a port that is free with its successor (a collector's
# acknowledgements go to port + 1), and odd, so that two calls never return
# a port and its successor. Chosen at random below the kernel's ephemeral
# range (ip_local_port_range): a sampler that connects before its collector
# listens must not be given that port as its own source port (a TCP
# connection to itself, which then holds the port: "Address already in use"
# for the collector).
free_port() {
  "${PY:-/usr/bin/python3}" -c '
import random, socket, sys
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
def pair(p):
    with socket.socket() as s, socket.socket() as t:
        try:
            s.bind(("127.0.0.1", p)); t.bind(("127.0.0.1", p + 1)); return p
        except OSError: return None
odd = list(range(10001, min(low, 65534) - 1, 2))
random.shuffle(odd)
for p in odd:
    if pair(p): print(p); sys.exit(0)
sys.exit("free_port: no free pair of ports below the ephemeral range")'
}
