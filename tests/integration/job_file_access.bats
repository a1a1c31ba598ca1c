#!/usr/bin/env bats
# Who may read a job's file (hdf5-owner, collector/sinks/hdf5/FileAccess):
# two throw-away users each run a job through colmet-job run; each reads
# their own file with the colmet Python package and is refused the other's.
# With hdf5-owner = collector nobody but the collector's user and group reads.
# Who the command of `sudo colmet-job run` runs as: the user who ran sudo,
# through the real sudo.

load helpers

setup() {
  require_root
  require_h5py
  command -v getfacl >/dev/null || skip "getfacl is not installed (apt-get install acl)"
  WORK=$(mktemp -d /tmp/colmet-access.XXXXXX)
  chmod 755 "$WORK"
  touch "$WORK/probe"
  setfacl -m u:nobody:r "$WORK/probe" 2>/dev/null || skip "the file system of /tmp has no POSIX ACLs"
  OUT="$WORK/out"
  LOG="$WORK/collector.log"
  ALICE="colmet-alice-$$"
  BOB="colmet-bob-$$"
  for u in "$ALICE" "$BOB"; do useradd --system --no-create-home --shell /usr/sbin/nologin "$u"; done
  # The Python package where the users can read it (a clone made by
  # mktemp -d is 0700).
  cp -r "$BATS_TEST_DIRNAME/../../python/colmet" "$WORK/colmet"
  chmod -R a+rX "$WORK/colmet"
}

teardown() {
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  rm -f "/etc/sudoers.d/colmet-test-$$"
  cat "$LOG" 2>/dev/null | tail -20 || true
  userdel "$ALICE" 2>/dev/null || true
  userdel "$BOB" 2>/dev/null || true
  groupdel "colmet-grp-$$" 2>/dev/null || true
  rm -rf "$WORK"
}

as() {  # as USER COMMAND...: run as that user, with no group of root's
  local user=$1; shift
  setpriv --reuid="$user" --regid=nogroup --clear-groups "$@"
}

# open_as USER FILE: colmet.open as USER; prints the job id, or the error in
# one line (exit 1) as a user would see it.
open_as() {
  as "$1" env PYTHONPATH="$WORK" PYTHONDONTWRITEBYTECODE=1 "$PY" -c '
import sys, colmet
try:
    print(colmet.open(sys.argv[1]).job_id)
except colmet.ColmetError as e:
    print(e)
    sys.exit(1)
' "$2"
}

@test "each user reads their own job's file with colmet.open and is refused the other's" {
  SUDO_USER="$ALICE" "$COLMET_BIN/colmet-job" run -q --hdf5-dir "$OUT" --job-id access-a -- sleep 0.3
  SUDO_USER="$BOB" "$COLMET_BIN/colmet-job" run -q --hdf5-dir "$OUT" --job-id access-b -- sleep 0.3
  # The directory the collector made: users reach files by name, list nothing.
  [ "$(stat -c %a "$OUT")" = 711 ]
  for f in a b; do
    [ "$(stat -c '%a %U' "$OUT/access-$f.h5")" = "640 root" ]
  done
  getfacl -cp "$OUT/access-a.h5" | grep -qx "user:$ALICE:r--"
  ! getfacl -cp "$OUT/access-a.h5" | grep -q "user:$BOB"
  getfacl -cp "$OUT/access-b.h5" | grep -qx "user:$BOB:r--"
  getfacl -cp "$OUT/access-a.h5" | grep -qx "other::---"
  # The summary's JSON beside each file: the same access, colmet-job reads it.
  [ "$(stat -c '%a %U' "$OUT/access-a.json")" = "640 root" ]
  getfacl -cp "$OUT/access-a.json" | grep -qx "user:$ALICE:r--"
  ! getfacl -cp "$OUT/access-a.json" | grep -q "user:$BOB"
  run as "$ALICE" "$COLMET_BIN/colmet-job" summary --wait 0 "$OUT/access-a.json"
  [ "$status" -eq 0 ] && [[ "${lines[0]}" == "colmet: job access-a ended after "* ]]
  run as "$BOB" "$COLMET_BIN/colmet-job" summary --wait 0 "$OUT/access-a.json"
  [ "$status" -eq 1 ] && [[ "$output" == *"access-a.json: Permission denied"* ]]

  run open_as "$ALICE" "$OUT/access-a.h5"
  echo "$output"
  [ "$status" -eq 0 ] && [ "$output" = access-a ]
  run open_as "$BOB" "$OUT/access-b.h5"
  [ "$status" -eq 0 ] && [ "$output" = access-b ]

  run open_as "$ALICE" "$OUT/access-b.h5"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "$output" == *"access-b.h5: permission denied"* ]]
  run open_as "$BOB" "$OUT/access-a.h5"
  [ "$status" -eq 1 ] && [[ "$output" == *"permission denied"* ]]
  # Not through the HDF5 library either, and no listing of other jobs.
  run as "$ALICE" cat "$OUT/access-b.h5"
  [ "$status" -ne 0 ] && [[ "$output" == *"Permission denied"* ]]
  run as "$ALICE" ls "$OUT"
  [ "$status" -ne 0 ]
}

@test "hdf5-owner = collector (in colmet.conf): the job's user gets no access" {
  printf '[collector]\nhdf5-owner = collector\n' > "$WORK/colmet.conf"
  PORT=$(free_port)
  "$COLMET_BIN/colmet-collector" --config "$WORK/colmet.conf" --allow-root --zeromq-bind-uri "tcp://127.0.0.1:$PORT" \
    --hdf5-dir "$OUT" --flush-interval 0.2 -v 2>>"$LOG" &
  COLLECTOR_PID=$!
  for _ in $(seq 100); do grep -q "listening on" "$LOG" && break; sleep 0.1; done
  "$COLMET_BIN/colmet-forge" --uri "tcp://127.0.0.1:$PORT" --host node1 --job owned --kind job_start \
    --meta "user=$ALICE"
  for _ in $(seq 100); do [ -f "$OUT/owned.h5" ] && break; sleep 0.1; done
  kill -TERM "$COLLECTOR_PID"; wait "$COLLECTOR_PID" || true; COLLECTOR_PID=
  [ "$(stat -c %a "$OUT")" = 750 ]
  [ "$(stat -c %a "$OUT/owned.h5")" = 640 ]
  ! getfacl -cp "$OUT/owned.h5" | grep -q "^user:[^:]"
  chmod 755 "$OUT"   # even where the directory lets her in
  run open_as "$ALICE" "$OUT/owned.h5"
  [ "$status" -eq 1 ] && [[ "$output" == *"permission denied"* ]]
}

@test "a job user unknown on the collector's host: the file is kept, unshared, and the reason logged" {
  PORT=$(free_port)
  mkdir -m 0711 "$OUT"
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "tcp://127.0.0.1:$PORT" \
    --hdf5-dir "$OUT" --flush-interval 0.2 -v 2>>"$LOG" &
  COLLECTOR_PID=$!
  for _ in $(seq 100); do grep -q "listening on" "$LOG" && break; sleep 0.1; done
  "$COLMET_BIN/colmet-forge" --uri "tcp://127.0.0.1:$PORT" --host node1 --job stranger --kind job_start \
    --meta user=colmet-nosuchuser
  for _ in $(seq 100); do grep -q "colmet-nosuchuser" "$LOG" && break; sleep 0.1; done
  kill -TERM "$COLLECTOR_PID"; wait "$COLLECTOR_PID" || true; COLLECTOR_PID=
  grep -q "user 'colmet-nosuchuser' is unknown on the collector's host" "$LOG"
  [ "$(stat -c %a "$OUT/stranger.h5")" = 640 ]
  ! getfacl -cp "$OUT/stranger.h5" | grep -q "^user:[^:]"
}

@test "the collector warns when users could not reach their files, and refuses an unknown hdf5-owner" {
  mkdir -m 0750 "$OUT"
  timeout 5 "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "ipc://$WORK/c.sock" \
    --hdf5-dir "$OUT" 2>>"$LOG" &
  COLLECTOR_PID=$!
  for _ in $(seq 100); do grep -q "listening on\|cannot reach" "$LOG" && break; sleep 0.1; done
  kill -TERM "$COLLECTOR_PID"; wait "$COLLECTOR_PID" || true; COLLECTOR_PID=
  grep -q "users cannot reach their job files: $OUT is mode 0750" "$LOG"
  run "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --hdf5-dir "$OUT" --hdf5-owner group
  [ "$status" -eq 64 ]
  [[ "$output" == *"'group' is not one of: job-user, collector"* ]]
}

@test "sudo colmet-job run: the command runs as the user who ran sudo, with their groups and environment; --as-root as root" {
  command -v sudo >/dev/null || skip "sudo is not installed (scripts/install-deps.sh test)"
  printf '%s ALL=(root) NOPASSWD: %s\n' "$ALICE" "$COLMET_BIN/colmet-job" >"/etc/sudoers.d/colmet-test-$$"
  chmod 0440 "/etc/sudoers.d/colmet-test-$$"
  groupadd --system "colmet-grp-$$"
  usermod -a -G "colmet-grp-$$" "$ALICE"
  mkdir -m 0777 "$WORK/cwd"
  cd "$WORK/cwd"
  # What the command sees, printed by itself; and whose processes the job's cgroup held.
  probe='echo $(id -u) $(id -g) $(id -G | tr " " "\n" | sort -n); echo "$HOME $USER $LOGNAME"'
  run setpriv --reuid="$ALICE" --regid="$(id -g "$ALICE")" --init-groups \
    sudo -n "$COLMET_BIN/colmet-job" run -q --hdf5-dir "$OUT" --job-id sudo-a -- sh -c "$probe"
  echo "$output"
  [ "$status" -eq 0 ]
  home=$(getent passwd "$ALICE" | cut -d: -f6)
  groups=$(id -G "$ALICE" | tr ' ' '\n' | sort -n | tr '\n' ' ')
  [[ "$groups" == *"$(getent group "colmet-grp-$$" | cut -d: -f3) "* ]]
  [ "${lines[0]}" = "$(id -u "$ALICE") $(id -g "$ALICE") ${groups% }" ]
  [ "${lines[1]}" = "$home $ALICE $ALICE" ]
  [[ "${lines[0]}" != "0 "* ]]
  # The job is the user's: recorded as theirs, readable by them.
  [ "$(h5 "$OUT/sudo-a.h5" "f['hosts'][list(f['hosts'])[0]].attrs['user']")" = "$ALICE" ]
  run open_as "$ALICE" "$OUT/sudo-a.h5"
  [ "$status" -eq 0 ] && [ "$output" = sudo-a ]

  run setpriv --reuid="$ALICE" --regid="$(id -g "$ALICE")" --init-groups \
    sudo -n "$COLMET_BIN/colmet-job" run -q --as-root --hdf5-dir "$OUT" --job-id sudo-b -- id -u
  echo "$output"
  [ "$status" -eq 0 ] && [ "$output" = 0 ]
}

@test "colmet-job run refuses a SUDO_USER unknown here, before it starts anything" {
  run env SUDO_USER="colmet-nosuchuser-$$" "$COLMET_BIN/colmet-job" run --hdf5-dir "$OUT" --job-id nouser -- true
  echo "$output"
  [ "$status" -eq 64 ]
  [[ "$output" == *"sudo's user 'colmet-nosuchuser-$$' (SUDO_USER) is not known here"*"--as-root"* ]]
  [ ! -e "$OUT/nouser.h5" ]
  [ -z "$(ls -d "$CGROOT"/colmet/nouser "$CGROOT"/*/colmet/nouser 2>/dev/null)" ]
}
