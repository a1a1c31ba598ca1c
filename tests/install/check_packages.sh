#!/usr/bin/env bash
# colmet's Debian packages, built from this tree and installed on this
# machine as a site would: dpkg-buildpackage, lintian (an error fails),
# dpkg -i; then colmet-job run from /usr/sbin with the installed config,
# the collector started as the colmet user exactly as its unit's ExecStart
# says, the refusal to run as root, the spool flush timer enabled and its
# service's ExecStart run, the installed SPANK plugin in the
# one-node Slurm test; an upgrade and a removal that keep the site's
# configuration and data; and dpkg --purge leaves nothing behind.
#
# usage: check_packages.sh            (root; changes the machine, undoes it)
# Exit 77 (skipped) without root or the Debian packaging tools.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
say() { echo "packages: $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (dpkg -i)"; exit 77; }
for tool in dpkg-buildpackage dh lintian; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps.sh test)"; exit 77; }
done
packages=(colmet-common colmet-node colmet-collector slurm-spank-colmet oar-colmet colmet-report)
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed"; then
    fail "$p is installed already: this test installs and purges the packages itself"
  fi
done

work=$(mktemp -d /tmp/colmet-packages.XXXXXX)
chmod 755 "$work"
collector_pid=
cleanup() {
  [ -n "$collector_pid" ] && kill -9 "$collector_pid" 2>/dev/null || true
  dpkg --purge "${packages[@]/%/-dbgsym}" "${packages[@]}" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# 1. Build (scripts/packages.sh, as a site would), or take the packages of
# COLMET_PACKAGES_DIR (made by scripts/packages.sh) when it is set.
if [ -n "${COLMET_PACKAGES_DIR:-}" ]; then
  say "taking the packages of $COLMET_PACKAGES_DIR"
  cp "$COLMET_PACKAGES_DIR"/*.deb "$COLMET_PACKAGES_DIR"/*.changes "$COLMET_PACKAGES_DIR"/*.buildinfo "$work/"
else
  say "building"
  # No -dbgsym packages here: they are not installed, and take build time.
  DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-} noautodbgsym" "$src/scripts/packages.sh" "$work" || fail "scripts/packages.sh"
fi
for p in "${packages[@]}"; do ls "$work/${p}_"*.deb >/dev/null 2>&1 || fail "no package $p"; done

# 2. lintian: errors fail, warnings are listed.
lintian --tag-display-limit 0 "$work"/*.changes >"$work/lintian.log" 2>&1 || true
cat "$work/lintian.log"
if grep -q "^E: " "$work/lintian.log"; then fail "lintian reports errors"; fi
say "lintian: no error ($(grep -c "^W: " "$work/lintian.log" || true) warnings)"

# 3. Install. Files before and after, for the purge check.
snapshot() {
  find /usr /etc /lib /var/lib /var/log -xdev \( -type f -o -type l -o -type d \) 2>/dev/null \
    | grep -v -E '^/var/lib/(dpkg|apt|systemd|ucf|logrotate)|^/var/log/(apt|dpkg|journal)|^/etc/(ld.so.cache|passwd|group|shadow|gshadow|subuid|subgid)|__pycache__|^/var/log/colmet(/|$)' \
    | sort
}
snapshot >"$work/before.txt"
debs=()
for p in "${packages[@]}"; do debs+=("$(ls "$work/${p}_"*.deb)"); done
dpkg -i "${debs[@]}" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "dpkg -i"; }
say "installed"
getent passwd colmet >/dev/null || fail "the package made no user colmet"
[ "$(stat -c '%U %a' /var/lib/colmet)" = "colmet 711" ] || fail "/var/lib/colmet: $(stat -c '%U %a' /var/lib/colmet)"
dpkg-query -W -f='${Conffiles}\n' colmet-common | grep -q "/etc/colmet/colmet.conf" || fail "colmet.conf is not a conffile"
dpkg-query -W -f='${Conffiles}\n' slurm-spank-colmet | grep -q "/etc/slurm/plugstack.conf.d/colmet.conf" ||
  fail "the plugstack file is not a conffile"
for m in colmet-node.8 colmet-job.8 colmet-collector.8 colmet.7 colmet-report.1 colmet-mail-summary.1 spank-colmet.8; do
  man -w "${m%.*}" >/dev/null 2>&1 || [ -e "/usr/share/man/man${m##*.}/$m.gz" ] || fail "man page $m not installed"
done
# The licence, in every package (debian/copyright, GPL-2+; LICENSE in the tree).
for p in "${packages[@]}"; do
  grep -q "^License: GPL-2+" "/usr/share/doc/$p/copyright" 2>/dev/null || fail "$p: no GPL-2+ in /usr/share/doc/$p/copyright"
done
for f in README.md grafana/colmet-cluster.json grafana/colmet-job.json vmalert/colmet-rules.yml; do
  dpkg -L colmet-collector | grep -qx "/usr/share/colmet/contrib/$f" || fail "colmet-collector lacks contrib/$f"
done

# The units' sandbox as systemd judges it (offline: no systemd is needed):
# no capability left in either bounding set, and the exposure score each gets.
for u in colmet-collector colmet-flush-spool; do
  f=$(ls /lib/systemd/system/$u.service /usr/lib/systemd/system/$u.service 2>/dev/null | head -1)
  [ -n "$f" ] || fail "no $u.service installed"
  systemd-analyze security --offline=yes "$f" >"$work/$u.security" 2>&1 || { cat "$work/$u.security"; fail "systemd-analyze security $u"; }
  if grep -E "^✗ (CapabilityBoundingSet|AmbientCapabilities)" "$work/$u.security"; then fail "$u.service keeps capabilities"; fi
  say "$u.service: $(grep -o 'Overall exposure level.*' "$work/$u.security"), no capability"
done

# A site's edit of a conffile survives the package's reinstallation.
echo "# edited by the site ($$)" >>/etc/colmet/colmet.conf
dpkg -i "$(ls "$work"/colmet-common_*.deb)" >"$work/reinstall.log" 2>&1 </dev/null || { cat "$work/reinstall.log"; fail "reinstall"; }
grep -q "^# edited by the site ($$)$" /etc/colmet/colmet.conf || fail "reinstalling colmet-common lost the site's colmet.conf"
say "a reinstall keeps the site's colmet.conf"

for f in /etc/logrotate.d/colmet-node /etc/logrotate.d/colmet-collector; do
  logrotate -d -s "$work/logrotate.state" "$f" >"$work/logrotate.log" 2>&1 || { cat "$work/logrotate.log"; fail "logrotate -d $f"; }
  if grep -q "^error" "$work/logrotate.log"; then cat "$work/logrotate.log"; fail "logrotate: errors in $f"; fi
done

# 4. colmet-job run from /usr/sbin, with the installed configuration.
out=$work/run
mkdir "$out"
/usr/sbin/colmet-job run --hdf5-dir "$out" --job-id pkg-run -- /bin/sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done' \
  >"$work/run.log" 2>&1 || { cat "$work/run.log"; fail "colmet-job run from /usr/sbin"; }
[ -f "$out/pkg-run.h5" ] || { cat "$work/run.log"; fail "colmet-job run wrote no file"; }
say "colmet-job run: $(grep -m1 'CPU time' "$work/run.log" | sed 's/^ *//')"
/usr/bin/colmet-report "$out/pkg-run.h5" -o "$work/report.html" >/dev/null || fail "the installed colmet-report"
grep -q "pkg-run" "$work/report.html" || fail "the report does not name the job"
printf '{"job_id": "pkg-run", "user": "root", "file": "%s", "summary": {"cpus": 1}}' "$out/pkg-run.h5" |
  /usr/bin/colmet-mail-summary --print >"$work/mail.txt" 2>&1 || { cat "$work/mail.txt"; fail "the installed colmet-mail-summary"; }
grep -q "^Subject: \[colmet\] job pkg-run ended" "$work/mail.txt" || { cat "$work/mail.txt"; fail "colmet-mail-summary's mail"; }

# 5. The collector, started as its unit says: user, directories, ExecStart.
unit=$(ls /lib/systemd/system/colmet-collector.service /usr/lib/systemd/system/colmet-collector.service 2>/dev/null | head -1)
[ -n "$unit" ] || fail "no colmet-collector.service installed"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
user=$(sed -n 's/^User=//p' "$unit")
logs=/var/log/$(sed -n 's/^LogsDirectory=//p' "$unit")
[ "$user" = colmet ] || fail "the unit runs the collector as '$user'"
[ -d "$logs" ] || fail "$logs is missing"
read -r -a argv <<<"$exec_start"
say "starting, as $user: $exec_start"
setpriv --reuid="$user" --regid="$user" --init-groups "${argv[@]}" 2>"$work/collector.err" &
collector_pid=$!
log=$logs/collector.log
for _ in $(seq 100); do grep -q "listening on" "$log" 2>/dev/null && break; sleep 0.1; done
if ! grep -q "listening on tcp://127.0.0.1:5556" "$log"; then
  cat "$log" "$work/collector.err" 2>&1; ls -la "$logs" /var/lib/colmet
  fail "the collector did not start as its unit says"
fi
/usr/sbin/colmet-job run --zeromq-uri tcp://127.0.0.1:5556 --job-id pkg-svc -q -- /bin/sleep 1 \
  || fail "colmet-job run to the service's collector"
for _ in $(seq 100); do [ -f /var/lib/colmet/pkg-svc.h5 ] && break; sleep 0.1; done
kill -TERM "$collector_pid"; wait "$collector_pid" || true; collector_pid=
[ "$(stat -c %U /var/lib/colmet/pkg-svc.h5)" = colmet ] || fail "the job file is not the colmet user's"
say "the service's collector stored pkg-svc.h5, owned by colmet"
# As root, without --allow-root: refused.
set +e
"${argv[@]}" >"$work/root.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 78 ] || { cat "$work/root.log"; fail "as root the collector exited $rc, not 78"; }
grep -q "refusing to run as root" "$work/root.log" "$log" || fail "no reason given for the refusal"
say "as root without --allow-root: refused (78)"

# The spool flush: colmet-node ships the timer, enabled (deb-systemd-helper
# makes the link even when systemd is not PID 1), and the service it starts,
# not enabled itself (static); the service's ExecStart, run as root as the
# timer would (on a spool of its own, not this machine's), exits 0 and logs
# to colmet-job's log.
timer=$(ls /lib/systemd/system/colmet-flush-spool.timer /usr/lib/systemd/system/colmet-flush-spool.timer 2>/dev/null | head -1)
[ -n "$timer" ] || fail "no colmet-flush-spool.timer installed"
dpkg -L colmet-node | grep -qx "$timer" || fail "colmet-flush-spool.timer is not colmet-node's"
flush_unit=${timer%.timer}.service
dpkg -L colmet-node | grep -qx "$flush_unit" || fail "colmet-node does not ship colmet-flush-spool.service"
[ -L /etc/systemd/system/timers.target.wants/colmet-flush-spool.timer ] || fail "colmet-flush-spool.timer is not enabled"
if ls /etc/systemd/system/*.wants/colmet-flush-spool.service >/dev/null 2>&1; then
  fail "colmet-flush-spool.service is enabled: only its timer should be"
fi
if command -v systemctl >/dev/null; then
  state=$(systemctl is-enabled colmet-flush-spool.timer 2>&1 || true)
  [ "$state" = enabled ] || fail "systemctl is-enabled colmet-flush-spool.timer: $state"
  state=$(systemctl is-enabled colmet-flush-spool.service 2>&1 || true)
  [ "$state" = static ] || fail "systemctl is-enabled colmet-flush-spool.service: $state (not static)"
fi
exec_start=$(sed -n 's/^ExecStart=//p' "$flush_unit")
read -r -a argv <<<"$exec_start"
# A spool holding a file that is not one: put aside, and said in the log.
mkdir -m 700 "$work/spool"
echo junk >"$work/spool/x.0000000000000000.spool"
say "running, as root: $exec_start --spool-dir $work/spool"
"${argv[@]}" --spool-dir "$work/spool" >"$work/flush.out" 2>&1 || { cat "$work/flush.out"; fail "the flush service's ExecStart"; }
[ ! -s "$work/flush.out" ] || { cat "$work/flush.out"; fail "the flush service's ExecStart wrote outside its log (--hook)"; }
grep -qF "flush-spool $work/spool: 1 files: 0 delivered, 0 kept for later, 0 in use, 1 damaged" /var/log/colmet/colmet.log ||
  fail "the flush service's ExecStart did not log to /var/log/colmet/colmet.log"
[ -f "$work/spool/x.0000000000000000.spool.damaged" ] || fail "the flush did not put the damaged spool file aside"
say "colmet-flush-spool.timer: enabled; its service (static) runs $exec_start"

# 6. The installed SPANK plugin in the one-node Slurm test.
plugin=$(dpkg -L slurm-spank-colmet | grep '/spank_colmet.so$')
if [ -n "${COLMET_BIN:-}" ]; then
  say "the one-node Slurm test with the installed plugin $plugin"
  set +e
  COLMET_SPANK_PLUGIN=$plugin bash "$src/tests/integration/slurm/slurm_cluster.sh" linuxproc >"$work/slurm.log" 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 0 ] || { tail -40 "$work/slurm.log"; fail "the Slurm test with the installed plugin (exit $rc)"; }
  say "Slurm test: OK with $plugin"
else
  say "COLMET_BIN is not set: the Slurm test with the installed plugin is not run"
fi

# 7. An upgrade (the same packages as version V+upgrade1, repacked with
# dpkg-deb) keeps the site's conffiles, the user colmet and the job files;
# removing the collector's package (not purging) keeps them too.
up=$work/upgrade
mkdir "$up"
for p in "${packages[@]}"; do
  dpkg-deb -R "$(ls "$work/${p}_"*.deb)" "$up/$p"
  sed -i -E 's/^Version: (.*)$/Version: \1+upgrade1/; s/\(= ([^)]*)\)/(= \1+upgrade1)/g' "$up/$p/DEBIAN/control"
  dpkg-deb -b "$up/$p" "$up/${p}.deb" >/dev/null
done
dpkg -i "$up"/*.deb >"$work/upgrade.log" 2>&1 </dev/null || { cat "$work/upgrade.log"; fail "the upgrade"; }
[ "$(dpkg-query -W -f='${Version}' colmet-collector)" = "$(dpkg-query -W -f='${Version}' colmet-common)" ] || fail "versions differ"
dpkg-query -W -f='${Version}' colmet-node | grep -q '+upgrade1$' || fail "colmet-node was not upgraded"
grep -q "^# edited by the site ($$)$" /etc/colmet/colmet.conf || fail "the upgrade lost the site's colmet.conf"
[ -f /var/lib/colmet/pkg-svc.h5 ] || fail "the upgrade lost the job files"
getent passwd colmet >/dev/null || fail "the upgrade lost the user colmet"
dpkg -r colmet-collector >"$work/remove.log" 2>&1 || { cat "$work/remove.log"; fail "dpkg -r colmet-collector"; }
[ -f /var/lib/colmet/pkg-svc.h5 ] && getent passwd colmet >/dev/null ||
  fail "removing (not purging) colmet-collector lost the job files or the user"
[ ! -e /usr/sbin/colmet-collector ] || fail "dpkg -r left the collector's program"
say "an upgrade keeps the site's colmet.conf, the user and the job files; so does removing the collector"

# 8. Purge: nothing of the packages is left, no process runs.
dpkg --purge "${packages[@]}" >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "dpkg --purge"; }
snapshot >"$work/after.txt"
if ! diff "$work/before.txt" "$work/after.txt" >"$work/diff.txt"; then
  cat "$work/diff.txt"; fail "the purge left the machine different from before the install"
fi
getent passwd colmet >/dev/null && fail "the user colmet is still there after the purge"
pgrep -f '^/usr/sbin/colmet-' >/dev/null && fail "a colmet process from /usr/sbin is still running"
say "purged: the file list is as before, no user colmet, no process"
say "OK"
