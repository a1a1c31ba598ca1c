#!/usr/bin/env bash
# cmake --install honours the prefix and DESTDIR for every file: programs,
# man pages, the Python package and colmet-report, the SPANK plugin (when it
# was built) and the OAR hook files. And what is installed works from there.
#
# usage: check_install.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: check_install.sh BUILD_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Every file the manifest lists is under ROOT, and there (under DESTDIR,
# which the manifest leaves out); prints how many.
all_under() {  # all_under MANIFEST ROOT [DESTDIR]
  local n=0 f
  while IFS= read -r f; do
    n=$((n + 1))
    case $f in "$2"/*) ;; *) fail "installed outside $2: $f" ;; esac
    [ -e "${3:-}$f" ] || fail "listed but not there: ${3:-}$f"
  done < "$1"
  [ "$n" -gt 0 ] || fail "nothing was installed"
  echo "$n"
}

# Each expected file (relative to the prefix) is there.
expect() {  # expect PREFIX_ROOT RELATIVE...
  local root=$1 rel; shift
  for rel in "$@"; do [ -e "$root/$rel" ] || fail "missing after install: $rel"; done
}

expected=(sbin/colmet-node sbin/colmet-job sbin/colmet-collector sbin/colmet-keygen bin/colmet-ctl bin/colmet-report
          share/man/man8/colmet-collector.8 share/man/man7/colmet.7 share/man/man1/colmet-report.1
          share/colmet/oar/install.sh share/colmet/oar/prologue share/colmet/oar/epilogue
          share/colmet/oar/jrm_init_hook.pl share/colmet/oar/jrm_clean_hook.pl share/colmet/oar/admission_rule_16.pl
          lib/python3/dist-packages/colmet/__init__.py etc/colmet/colmet.conf etc/logrotate.d/colmet-node etc/logrotate.d/colmet-collector
          lib/systemd/system/colmet-collector.service lib/systemd/system/colmet-perf-event.service
          lib/systemd/system/colmet-flush-spool.service lib/systemd/system/colmet-flush-spool.timer)
plugin_dir=$(sed -n 's/^COLMET_SLURM_PLUGINDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
have_spank=0
[ -f "$build/hooks/slurm/spank_colmet.so" ] && have_spank=1

# 1. --prefix P: everything under P.
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install --prefix"; }
n=$(all_under "$build/install_manifest.txt" "$prefix")
expect "$prefix" "${expected[@]}"
if [ "$have_spank" = 1 ]; then
  case $plugin_dir in
    /*) echo "note: COLMET_SLURM_PLUGINDIR is absolute ($plugin_dir): the plugin is not checked under the prefix" ;;
    *) expect "$prefix" "$plugin_dir/spank_colmet.so"
       echo "plugin: $plugin_dir/spank_colmet.so under the prefix" ;;
  esac
fi
[ -x "$prefix/share/colmet/oar/install.sh" ] || fail "install.sh is not executable"
echo "--prefix: $n files, all under $prefix"

# The installed colmet-report runs the installed package.
grep -q "$prefix/lib/python3/dist-packages" "$prefix/bin/colmet-report" || fail "colmet-report does not name the prefix"
"$prefix/bin/colmet-report" --help >/dev/null || fail "the installed colmet-report --help failed"
"$prefix/sbin/colmet-collector" --version >/dev/null || fail "the installed colmet-collector does not run"

# 2. DESTDIR (a package's staging tree): everything under DESTDIR/<prefix>,
# and what is compiled in names the prefix, not DESTDIR.
dest=$work/dest
configured=$(sed -n 's/^CMAKE_INSTALL_PREFIX:[A-Z]*=//p' "$build/CMakeCache.txt")
DESTDIR=$dest cmake --install "$build" >"$work/install.log" || { cat "$work/install.log"; fail "DESTDIR install"; }
n=$(all_under "$build/install_manifest.txt" "$configured" "$dest")
stray=$(find "$dest" \( -type f -o -type l \) ! -path "$dest$configured/*")
[ -z "$stray" ] || fail "DESTDIR holds files outside $configured: $stray"
expect "$dest$configured" "${expected[@]}"
grep -q "$dest" "$dest$configured/bin/colmet-report" && fail "colmet-report names the DESTDIR"
echo "DESTDIR: $n files, all under $dest$configured"
echo "install: OK"
