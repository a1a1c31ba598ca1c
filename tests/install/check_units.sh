#!/usr/bin/env bash
# The files a site installs besides the programs: the systemd units pass
# `systemd-analyze verify` (offline: systemd need not be PID 1), name the
# installed programs and keep the collector unprivileged; the spool flush
# runs from its timer;
# the logrotate file parses; the example colmet.conf is accepted by the
# programs that read it.
#
# usage: check_units.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: check_units.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze is not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

root=$work/root
DESTDIR=$root cmake --install "$build" >"$work/install.log" || { cat "$work/install.log"; fail "DESTDIR install"; }
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:[A-Z]*=//p' "$build/CMakeCache.txt")
units=$root$prefix/lib/systemd/system
mkdir "$work/units"
for unit in colmet-collector.service colmet-perf-event.service colmet-flush-spool.service colmet-flush-spool.timer; do
  [ -f "$units/$unit" ] || fail "$unit is not installed"
  # verify checks that ExecStart's program exists: a copy of the unit names
  # it under DESTDIR (the rest is checked against this machine's units). A
  # timer is verified with the service it starts (copied here before it).
  sed "s|=$prefix/sbin/|=$root$prefix/sbin/|" "$units/$unit" >"$work/units/$unit"
  if ! systemd-analyze verify --man=no "$work/units/$unit" >"$work/verify.log" 2>&1; then
    cat "$work/verify.log"; fail "systemd-analyze verify $unit"
  fi
  # Any complaint about this unit counts, even when verify exits 0.
  if grep -i "$unit" "$work/verify.log"; then fail "systemd-analyze verify has remarks on $unit"; fi
  echo "verify: $unit OK"
done

# The collector's unit: the installed program, as colmet, no capability.
unit=$units/colmet-collector.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ "$exec_start" == "$prefix/sbin/colmet-collector "* ]] || fail "ExecStart does not name $prefix/sbin: $exec_start"
grep -qx "User=colmet" "$unit" || fail "the collector does not run as colmet"
grep -qx "CapabilityBoundingSet=" "$unit" || fail "the collector keeps capabilities"
for key in ProtectSystem=strict ProtectHome=yes PrivateTmp=yes NoNewPrivileges=yes Restart=on-failure \
           StateDirectory=colmet LogsDirectory=colmet-collector RuntimeDirectory=colmet-collector; do
  grep -qx "$key" "$unit" || fail "colmet-collector.service lacks $key"
done
grep -q "^RestrictAddressFamilies=" "$unit" || fail "colmet-collector.service lacks RestrictAddressFamilies"
# What ExecStart runs must start: its options parse (--help after them).
read -r -a argv <<<"$exec_start"
"$root${argv[0]}" "${argv[@]:1}" --help >/dev/null || fail "ExecStart's options are refused: $exec_start"
echo "colmet-collector.service: runs $exec_start as colmet, without capabilities"

# The spool flush: a oneshot service, started by its timer (which the
# package enables), never enabled itself; as root, writing only the spool
# and the log directory.
unit=$units/colmet-flush-spool.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ "$exec_start" == "$prefix/sbin/colmet-job flush-spool "* ]] || fail "ExecStart does not name $prefix/sbin: $exec_start"
[[ " $exec_start " == *" --hook "* ]] || fail "colmet-flush-spool.service does not run in hook mode: $exec_start"
# The machine's /tmp, read-only (ProtectSystem=strict), not a private one: a
# collector's ipc:// socket there stays reachable. No capability: the spool
# and the keys are root's.
for key in Type=oneshot ProtectSystem=strict ProtectHome=yes PrivateTmp=no NoNewPrivileges=yes CapabilityBoundingSet= \
           ReadWritePaths=-/var/spool/colmet LogsDirectory=colmet; do
  grep -qx "$key" "$unit" || fail "colmet-flush-spool.service lacks $key"
done
grep -q "^RestrictAddressFamilies=.*AF_INET" "$unit" || fail "colmet-flush-spool.service cannot reach a collector over TCP"
grep -q "^User=" "$unit" && fail "colmet-flush-spool.service is not root's (the spool is root-only)"
grep -q "^StateDirectory=" "$unit" && fail "colmet-flush-spool.service has a StateDirectory (the spool is in /var/spool)"
grep -qi "^\[Install\]" "$unit" && fail "colmet-flush-spool.service has an [Install] section: its timer starts it"
grep -qx "WantedBy=timers.target" "$units/colmet-flush-spool.timer" || fail "colmet-flush-spool.timer is not wanted by timers.target"
grep -q "^OnUnitActiveSec=" "$units/colmet-flush-spool.timer" || fail "colmet-flush-spool.timer does not repeat"
read -r -a argv <<<"$exec_start"
"$root${argv[0]}" "${argv[@]:1}" --help >/dev/null || fail "ExecStart's options are refused: $exec_start"
echo "colmet-flush-spool.service: runs $exec_start, from colmet-flush-spool.timer"

# The example configuration: every key is one the programs know.
conf=$root/${prefix#/}/etc/colmet/colmet.conf
[ -f "$conf" ] || conf=$root/etc/colmet/colmet.conf
"$root$prefix/sbin/colmet-collector" --config "$conf" --help >/dev/null || fail "colmet-collector refuses $conf"
"$root$prefix/sbin/colmet-node" --config "$conf" --help >/dev/null || fail "colmet-node refuses $conf"
grep -q '^hdf5-dir = /var/lib/colmet$' "$conf" || fail "colmet.conf does not store under /var/lib/colmet"
echo "colmet.conf: accepted by colmet-collector and colmet-node"

# logrotate: the file parses (debug mode changes nothing).
if command -v logrotate >/dev/null; then
  for f in colmet-node colmet-collector; do
    lr=$root/${prefix#/}/etc/logrotate.d/$f
    [ -f "$lr" ] || lr=$root/etc/logrotate.d/$f
    # The user colmet comes with the collector's package (whose test runs
    # logrotate on the installed file); without it, check the rest.
    if ! getent passwd colmet >/dev/null; then
      sed 's/^\( *su \)colmet colmet$/\1root root/' "$lr" >"$work/$f" && lr=$work/$f
    fi
    logrotate -d -s "$work/state" "$lr" >"$work/logrotate.log" 2>&1 || { cat "$work/logrotate.log"; fail "logrotate -d $f"; }
    if grep -qi "error" "$work/logrotate.log"; then cat "$work/logrotate.log"; fail "logrotate reports errors in $f"; fi
  done
  echo "logrotate: OK"
else
  echo "logrotate is not installed: its file is not checked"
fi
echo "units: OK"
