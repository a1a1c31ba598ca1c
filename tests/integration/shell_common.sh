# Shell helpers shared by the bats tests (helpers.bash) and the OAR test
# scripts (oar/oar_common.sh); sourced. The numeric checks need $PY.

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

within_pct() {  # within_pct ACTUAL EXPECTED PCT
  "$PY" -c 'import sys; a,e,p=map(float,sys.argv[1:]); sys.exit(0 if abs(a-e) <= e*p/100 else 1)' "$1" "$2" "$3"
}

at_least() {  # at_least ACTUAL MIN
  "$PY" -c 'import sys; a,m=map(float,sys.argv[1:]); sys.exit(0 if a >= m else 1)' "$1" "$2"
}
