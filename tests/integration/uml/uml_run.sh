#!/usr/bin/env bash
# Run a command as root inside a real cgroup v2 kernel: Debian's
# user-mode-linux (a Linux 6.1 kernel run as a user process), booted with this
# machine's own files as its root file system (hostfs), in a few seconds.
#
#   uml_run.sh [--mem SIZE] [--timeout SECONDS] [--disk MIB] [--] COMMAND [ARGS...]
#
# The guest mounts its own /proc, /sys, cgroup2 on /sys/fs/cgroup (controllers
# cpu, io, memory, pids; no cpuset in Debian's build), tmpfs on /run, /tmp and
# /dev/shm, devpts on /dev/pts, brings up the loopback (with 192.0.2.1 besides 127.0.0.1: the guest
# has no network device at all) and takes this machine's host name (so that
# /etc/hosts resolves it); everything else
# (binaries, the build tree, /etc/passwd) is the host's, read and written
# through hostfs. It has one CPU and no perf_event (user-mode Linux has no
# perf support). --disk gives it a fresh ext4-ready block device of MIB MiB,
# /dev/ubda (exported as COLMET_UML_DISK), for block I/O accounting, which
# hostfs does not have.
#
# COMMAND runs (with COLMET_UML=1 set) in the current directory with this environment's COLMET_*,
# PY, PATH and SLURM_CONF variables; its output is printed here and its exit
# status is this script's (77, a skip, passes through). The guest is powered
# off when it ends or after --timeout (default 600 s; then 124).
#
# Exits 77 with the reason where it cannot boot: not root (the guest's root
# writes the host's files as this user), no /usr/bin/linux.uml (apt-get
# install user-mode-linux: scripts/install-deps.sh does), or a kernel that
# does not start (no /dev/shm or memory for it). COLMET_UML_KEEP=1 keeps the
# exchange directory (console log) for debugging.
set -uo pipefail

mem=1536M
limit=600
disk=0
while [ $# -gt 0 ]; do
  case "$1" in
    --mem) mem=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --disk) disk=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "uml_run.sh: unknown option $1" >&2; exit 64 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: uml_run.sh [--mem SIZE] [--timeout S] [--disk MIB] [--] COMMAND [ARGS...]" >&2; exit 64; }

UML=${COLMET_UML_KERNEL:-/usr/bin/linux.uml}
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root: the guest's root reads and writes this machine's files as the user who boots it"
[ -x "$UML" ] || skip "$UML is missing (apt-get install user-mode-linux; scripts/install-deps.sh installs it)"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The exchange directory must be outside /tmp and /run (the guest mounts
# tmpfs there) and reachable by the guest under the same path.
dir=$(mktemp -d /var/tmp/colmet-uml.XXXXXX) || exit 1
cleanup() { [ "${COLMET_UML_KEEP:-0}" = 1 ] && echo "# kept $dir" || rm -rf "$dir"; }
trap cleanup EXIT

{
  printf 'cd %q\n' "$PWD"
  for v in $(compgen -e); do
    case "$v" in COLMET_*|PY|PATH|SLURM_CONF|ASAN_OPTIONS|UBSAN_OPTIONS|LSAN_OPTIONS) printf 'export %s=%q\n' "$v" "${!v}" ;; esac
  done
  printf 'export COLMET_UML_HOSTNAME=%q\n' "$(hostname)"
  printf 'cmd=('; printf '%q ' "$@"; printf ')\n'
} >"$dir/env"

# The guest's /tmp is a tmpfs of its own: what the command needs from the
# machine's /tmp (a clone or a build there) is bound into it, one entry of
# /tmp per line.
for p in "$PWD" "${COLMET_BIN:-}" "$here" "$@"; do
  case "$p" in /tmp/?*) p=${p#/tmp/}; echo "${p%%/*}" ;; esac
done | sort -u >"$dir/tmp_entries"

args=(mem="$mem" root=/dev/root rootfstype=hostfs rootflags=/ rw init="$here/guest_init.sh"
      con=null con0=null,fd:2 COLMET_UML_DIR="$dir")
if [ "$disk" -gt 0 ]; then
  truncate -s "${disk}M" "$dir/disk.img"
  args+=(ubd0="$dir/disk.img")
  echo "export COLMET_UML_DISK=/dev/ubda" >>"$dir/env"
fi

started=$(date +%s)
# Its own session: the kernel's host processes (one per guest process
# address space) go with it when the time runs out.
setsid "$UML" "${args[@]}" </dev/null >"$dir/console.log" 2>&1 &
uml=$!
timed_out=0
while kill -0 "$uml" 2>/dev/null; do
  if [ $(( $(date +%s) - started )) -ge "$limit" ]; then
    timed_out=1
    kill -KILL -- "-$uml" 2>/dev/null
    break
  fi
  sleep 0.2
done
wait "$uml" 2>/dev/null

cat "$dir/guest.log" 2>/dev/null
if [ "$timed_out" = 1 ]; then
  echo "uml_run.sh: the guest did not finish within $limit s; its console:"
  tail -20 "$dir/console.log"
  exit 124
fi
if [ ! -s "$dir/guest.rc" ]; then
  if grep -q "Run .*guest_init.sh as init process" "$dir/console.log"; then
    echo "uml_run.sh: the guest stopped without an exit status; its console:"
    tail -30 "$dir/console.log"
    exit 70
  fi
  skip "the user-mode Linux kernel did not boot: $(grep -m3 -iE 'error|fail|panic|cannot' "$dir/console.log" | tr '\n' ' ')"
fi
echo "# user-mode Linux guest: $(( $(date +%s) - started )) s"
exit "$(cat "$dir/guest.rc")"
