#!/usr/bin/env bats
# The summary delivered at job end (colmet-collector --on-job-end,
# colmet-mail-summary(1)): real jobs sampled into a real collector, which
# runs colmet-mail-summary for each ended job; a real MTA from Debian (dma)
# delivers the mail into the job user's mailbox, /var/mail/<user>. Also: a
# job whose user has no mail address, and an MTA slower than the command's
# time, each logged and counted while ingest goes on.

load helpers

setup() {
  require_root
  require_h5py
  [ -x /usr/sbin/sendmail ] && [ -x /usr/sbin/dma ] ||
    skip "no local MTA (dma: scripts/install-deps.sh test installs it)"
  OUT="$BATS_TEST_TMPDIR/out"
  URI="tcp://127.0.0.1:$(free_port)"
  U="colmetmail$$"
  useradd -M -s /usr/sbin/nologin "$U"
  REL="/colmet-test/mail-$$"
  make_job_cgroup "$REL"
  PIDS=()
}

teardown() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  remove_job_cgroup "$REL"
  userdel "$U" 2>/dev/null || true
  rm -f "/var/mail/$U"
  [ -f "$BATS_TEST_TMPDIR/collector.log" ] && grep "on-job-end" "$BATS_TEST_TMPDIR/collector.log" | sed 's/^/# /' >&3
  true
}

# job ID USER: a sampler for one second on the test's cgroup, then its end.
job() {
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir none --job-id "$1" --cgroup "$REL" --zeromq-uri "$URI" \
    --sample-period 0.3 --hostname mailhost --user "$2" --control-dir "" 2>>"$BATS_TEST_TMPDIR/node.log" &
  local pid=$!
  sleep 1
  stop_pid "$pid" 5
}

# wait_for_log TEXT [SECONDS]: until the collector's log has TEXT.
wait_for_log() {
  local i
  for ((i = 0; i < ${2:-20} * 10; i++)); do
    grep -qF -- "$1" "$BATS_TEST_TMPDIR/collector.log" && return 0
    sleep 0.1
  done
  echo "not in the collector's log within ${2:-20} s: $1"
  return 1
}

@test "a job's user gets its summary by mail through the host's MTA, a slow one too" {
  # An MTA that takes a second, within the command's ten.
  printf '#!/bin/sh\nsleep 1\nexec /usr/sbin/sendmail "$@"\n' > "$BATS_TEST_TMPDIR/slow-sendmail"
  chmod +x "$BATS_TEST_TMPDIR/slow-sendmail"
  start_collector "$URI" "$OUT" --on-job-end "$COLMET_BIN/colmet-mail-summary --sendmail $BATS_TEST_TMPDIR/slow-sendmail" \
    --on-job-end-timeout 10
  job "mail-$$" "$U"
  wait_for_log "on-job-end: job mail-$$: done: colmet-mail-summary: job mail-$$: summary mailed to $U"
  for i in $(seq 100); do grep -q "^Subject: " "/var/mail/$U" 2>/dev/null && break; sleep 0.05; done
  cat "/var/mail/$U"
  grep -q "^To: $U\$" "/var/mail/$U"
  grep -q "^Subject: \[colmet\] job mail-$$ ended: .* CPU efficiency, .* peak memory\$" "/var/mail/$U"
  grep -q "^Job mail-$$ (user $U) has ended.\$" "/var/mail/$U"
  grep -q "^  CPU efficiency  [0-9.]* %\$" "/var/mail/$U"
  grep -q "^  Samples         [0-9]* received, 0 lost\$" "/var/mail/$U"
  grep -q "^  colmet-report $OUT/mail-$$.h5\$" "/var/mail/$U"
  # The notes of colmet-report: a sleeping cgroup is far below 50 % of its CPUs.
  grep -q "^Notes:\$" "/var/mail/$U"
  grep -q "CPU efficiency)\.\$" "/var/mail/$U"
  stop_pid "$COLLECTOR_PID" 20; COLLECTOR_PID=
  grep -q "on-job-end: 1 run, 1 succeeded, 0 failed (0 timed out), 0 dropped" "$BATS_TEST_TMPDIR/collector.log"
}

@test "a user without a mail address and an MTA over time are logged and counted, and ingest goes on" {
  printf '#!/bin/sh\nsleep 60\nexec /usr/sbin/sendmail "$@"\n' > "$BATS_TEST_TMPDIR/stuck-sendmail"
  chmod +x "$BATS_TEST_TMPDIR/stuck-sendmail"
  start_collector "$URI" "$OUT" --on-job-end "$COLMET_BIN/colmet-mail-summary --sendmail $BATS_TEST_TMPDIR/stuck-sendmail" \
    --on-job-end-timeout 3
  job "nomail-$$" "nosuchuser$$"
  wait_for_log "on-job-end: job nomail-$$: exit status 67: colmet-mail-summary: job nomail-$$: not mailed: no mail address for user 'nosuchuser$$'"
  job "stuck-$$" "$U"
  # While its command waits on the MTA (3 s), another job is stored whole.
  job "during-$$" "$U"
  for i in $(seq 15); do
    run h5 "$OUT/during-$$.h5" "int(f['summary'].attrs['hosts_without_job_end'])"
    [ "$output" = 0 ] && break
    sleep 0.1
  done
  [ "$output" = 0 ]
  ! grep -q "on-job-end: job stuck-$$: killed" "$BATS_TEST_TMPDIR/collector.log"
  wait_for_log "on-job-end: job stuck-$$: killed after 3 s"
  # "during" was queued behind nothing (4 at once): its own command is stuck too.
  wait_for_log "on-job-end: job during-$$: killed after 3 s"
  [ ! -s "/var/mail/$U" ]
  stop_pid "$COLLECTOR_PID" 20; COLLECTOR_PID=
  grep -q "on-job-end: 3 run, 0 succeeded, 3 failed (2 timed out), 0 dropped" "$BATS_TEST_TMPDIR/collector.log"
  # The stuck sendmail was killed with the command that started it.
  ! pgrep -f "$BATS_TEST_TMPDIR/stuck-sendmail"
}

@test "colmet-mail-summary refuses what is not a summary, and prints the mail with --print" {
  run "$COLMET_BIN/colmet-mail-summary" --print <<<'not json'
  [ "$status" -eq 65 ]
  [[ "$output" == *"standard input is not JSON"* ]]
  run "$COLMET_BIN/colmet-mail-summary" --print <<<'{"job_id": "1", "summary": {"cpus": "two"}}'
  [ "$status" -eq 65 ]
  [[ "$output" == *"job 1: summary field 'cpus' is not a number"* ]]
  run "$COLMET_BIN/colmet-mail-summary" --print <<<'{"job_id": "1", "user": null, "summary": {}}'
  [ "$status" -eq 67 ]
  [[ "$output" == *"job 1: not mailed: its user is unknown"* ]]
  printf 'alice alice@example.org # the lab\n' > "$BATS_TEST_TMPDIR/aliases"
  run "$COLMET_BIN/colmet-mail-summary" --print --aliases "$BATS_TEST_TMPDIR/aliases" --from colmet@example.org \
    <<<'{"job_id": "7", "user": "alice", "complete": false, "summary": {"hosts_without_job_end": 1, "cpu_efficiency": 0.25}}'
  [ "$status" -eq 0 ]
  [[ "$output" == *"To: alice@example.org"* ]]
  [[ "$output" == *"From: colmet@example.org"* ]]
  [[ "$output" == *"Subject: [colmet] job 7 ended: 25.0 % CPU efficiency, unknown peak memory"* ]]
  [[ "$output" == *"1 of its hosts sent no end"* ]]
  printf 'alice\n' > "$BATS_TEST_TMPDIR/bad-aliases"
  run "$COLMET_BIN/colmet-mail-summary" --print --aliases "$BATS_TEST_TMPDIR/bad-aliases" <<<'{"job_id": "7", "summary": {}}'
  [ "$status" -eq 65 ]
  [[ "$output" == *"bad-aliases, line 1: expected 'user address'"* ]]
}
