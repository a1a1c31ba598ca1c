#!/bin/bash
# Install colmet's OAR 2.5 integration on an OAR server, or undo it (--uninstall).
# See hooks/oar/README.md and colmet(7). Run as root on the OAR server.
#
# What it does (each part can be left out):
#  * JRM: writes a copy of job_resource_manager_cgroups.pl with the colmet hooks
#    (start at init, stop at clean) and $Enable_perf_event_cg = "YES", and points
#    JOB_RESOURCE_MANAGER_FILE in oar.conf at it. The package's JRM is not modified.
#  * admission rule 16: adds the colmet pattern to the job-type whitelist, so that
#    "oarsub -t colmet" and "-t colmet=SPEC" are accepted.
#  * --prologue-epilogue (instead of the JRM hooks, or in addition): installs the
#    prologue/epilogue pair and sets PROLOGUE_EXEC_FILE / EPILOGUE_EXEC_FILE.
# Everything it changes is backed up in the state directory first; --uninstall
# restores the backups (or, for a file edited since, removes only colmet's part).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
etc=/etc/oar
state=/var/lib/colmet/oar-hooks
colmet_job=
config=
run_dir=
log_file=
stop_timeout=
do_jrm=1
do_rule=1
do_prolog=0
uninstall=0
jrm_name=job_resource_manager_cgroups.pl
copy_name=job_resource_manager_cgroups_colmet.pl
oaradmissionrules=${OARADMISSIONRULES:-oaradmissionrules}

usage() {
  cat <<EOF
Usage: $0 [OPTIONS]          install colmet's OAR hooks
       $0 --uninstall [--state-dir DIR]

  --colmet-job PATH     absolute path of colmet-job on the nodes
                        (default: command -v colmet-job, else /usr/local/sbin/colmet-job)
  --config FILE         colmet.conf for the samplers (colmet-job start -c FILE)
  --run-dir DIR         colmet-job --run-dir (default: colmet-job's, /run/colmet)
  --log-file FILE       colmet-job --log-file (default: colmet-job's, /var/log/colmet/colmet.log)
  --stop-timeout S      colmet-job stop --timeout S
  --etc-dir DIR         OAR's configuration directory (default /etc/oar)
  --state-dir DIR       backups and the install record (default /var/lib/colmet/oar-hooks)
  --no-jrm              leave the job resource manager alone
  --no-admission-rule   leave admission rule 16 alone
  --prologue-epilogue   also install the prologue/epilogue pair (first node only)
  --uninstall           undo a previous install (from the state directory)
  -h, --help            this text
EOF
}

die() { echo "install.sh: $*" >&2; exit 1; }
say() { echo "install.sh: $*"; }

while [ $# -gt 0 ]; do
  case $1 in
    --colmet-job) colmet_job=${2:?}; shift ;;
    --config) config=${2:?}; shift ;;
    --run-dir) run_dir=${2:?}; shift ;;
    --log-file) log_file=${2:?}; shift ;;
    --stop-timeout) stop_timeout=${2:?}; shift ;;
    --etc-dir) etc=${2:?}; shift ;;
    --state-dir) state=${2:?}; shift ;;
    --no-jrm) do_jrm=0 ;;
    --no-admission-rule) do_rule=0 ;;
    --prologue-epilogue) do_prolog=1 ;;
    --uninstall) uninstall=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
  shift
done

[ "$(id -u)" -eq 0 ] || die "run as root"
conf=$etc/oar.conf
record=$state/install.env

# ---------------------------------------------------------------- helpers

sha() { sha256sum "$1" | cut -d' ' -f1; }

# backup FILE NAME: keep FILE (with mode and owner) as $state/NAME.orig once.
backup() { cp -p "$1" "$state/$2.orig"; }

# overwrite FILE < content: replace the content, keep the inode, mode and owner.
overwrite() { local tmp; tmp=$(mktemp); cat > "$tmp"; cat "$tmp" > "$1"; rm -f "$tmp"; }

# perl_quote WORD: WORD as a Perl single-quoted string.
perl_quote() { local s=${1//\\/\\\\}; printf "'%s'" "${s//\'/\\\'}"; }

# perl_list WORD...: a comma-separated list of Perl strings (empty for none).
perl_list() { local out="" w; for w in "$@"; do out+="${out:+, }$(perl_quote "$w")"; done; printf '%s' "$out"; }

# sh_list WORD...: the words quoted for bash.
sh_list() { local out="" w; for w in "$@"; do out+="${out:+ }$(printf '%q' "$w")"; done; printf '%s' "$out"; }

# conf_get KEY: the active (uncommented) line setting KEY in oar.conf, if any.
conf_get() { grep -E "^[[:space:]]*$1=" "$conf" | tail -n 1 || true; }

# edit FILE PERL-ARGS...: filter FILE through perl, keeping its inode, mode and owner.
edit() { local f=$1 tmp; shift; tmp=$(mktemp); perl "$@" "$f" > "$tmp" && cat "$tmp" > "$f"; local rc=$?; rm -f "$tmp"; return $rc; }

# conf_set KEY VALUE: set KEY="VALUE" in oar.conf (the last active line, else appended).
conf_set() {
  KEY=$1 VALUE=$2 edit "$conf" -0777 -pe '
    my ($k, $v) = ($ENV{KEY}, $ENV{VALUE});
    my @m = /^[ \t]*\Q$k\E=.*$/mg;
    if (@m) { my $last = $m[-1]; s/^\Q$last\E$/$k="$v"/m; } else { $_ .= "\n" unless /\n\z/; $_ .= "$k=\"$v\"\n"; }
  '
}

# rule_tmpdir: a directory oaradmissionrules (which runs as oar) may write to.
rule_tmpdir() { local d; d=$(mktemp -d); chown oar "$d" 2>/dev/null || chmod 777 "$d"; echo "$d"; }

rule_show() { # rule_show FILE
  "$oaradmissionrules" --show 16 --full --no-header --to-file "$1" >/dev/null
  [ -s "$1" ] || die "admission rule 16 is empty or could not be read (is the OAR database up?)"
}
rule_modify() { "$oaradmissionrules" --modify 16 --from-file "$1" >/dev/null; }

# ---------------------------------------------------------------- uninstall

do_uninstall() {
  [ -f "$record" ] || die "nothing to undo: no install record $record"
  # shellcheck disable=SC1090
  . "$record"
  local rc=0
  if [ -n "${JRM_COPY:-}" ]; then
    if [ -f "$JRM_COPY" ] && [ "$(sha "$JRM_COPY")" != "$JRM_COPY_SHA" ]; then
      cp -p "$JRM_COPY" "$JRM_COPY.edited.$(date +%Y%m%d%H%M%S)"
      say "$JRM_COPY was edited after the install: a copy of it is kept next to it"
    fi
    rm -f "$JRM_COPY"
    say "removed $JRM_COPY"
  fi
  if [ -n "${CONF_SHA:-}" ]; then
    if [ "$(sha "$CONF")" = "$CONF_SHA" ]; then
      overwrite "$CONF" < "$state/oar.conf.orig"
      say "restored $CONF"
    else
      # Edited since: put back only the keys colmet changed.
      local key line
      for key in $CONF_KEYS; do
        line=$(grep -E "^[[:space:]]*$key=" "$state/oar.conf.orig" | tail -n 1 || true)
        if [ -n "$line" ]; then
          KEY=$key LINE=$line edit "$CONF" -pe 's/^[ \t]*\Q$ENV{KEY}\E=.*$/$ENV{LINE}/'
        else
          KEY=$key edit "$CONF" -ne 'print unless /^[ \t]*\Q$ENV{KEY}\E=/'
        fi
      done
      say "$CONF was edited after the install: restored only $CONF_KEYS"
    fi
  fi
  if [ -n "${PROLOG_FILES:-}" ]; then
    rm -f $PROLOG_FILES
    say "removed $PROLOG_FILES"
  fi
  if [ "${RULE16:-0}" = 1 ]; then
    local d; d=$(rule_tmpdir)
    if rule_show "$d/now.pl" && grep -q '# colmet: ' "$d/now.pl"; then
      if [ "$(sha "$d/now.pl")" = "$RULE16_SHA" ]; then
        cp "$state/rule16.orig" "$d/orig.pl"
      else
        grep -v '# colmet: ' "$d/now.pl" > "$d/orig.pl"
        say "admission rule 16 was edited after the install: removing only the colmet line"
      fi
      chown oar "$d/orig.pl" 2>/dev/null || true
      if rule_modify "$d/orig.pl"; then say "restored admission rule 16"; else say "cannot restore rule 16"; rc=1; fi
    else
      say "admission rule 16 has no colmet line: left as it is"
    fi
    rm -rf "$d"
  fi
  [ "$rc" -eq 0 ] || die "uninstall incomplete; the backups stay in $state"
  rm -f "$record" "$state"/*.orig
  rmdir "$state" 2>/dev/null || true
  say "uninstalled"
}

if [ "$uninstall" -eq 1 ]; then
  do_uninstall
  exit 0
fi

# ---------------------------------------------------------------- install

if [ -f "$record" ]; then
  say "already installed: undoing the previous install first"
  bash "$0" --uninstall --state-dir "$state" --etc-dir "$etc"
fi

[ -f "$conf" ] || die "no $conf (is oar-server installed? see --etc-dir)"
if [ -z "$colmet_job" ]; then
  colmet_job=$(command -v colmet-job || echo /usr/local/sbin/colmet-job)
fi
[[ $colmet_job == /* ]] || die "--colmet-job must be an absolute path (the hooks run with OAR's PATH)"
[ -x "$colmet_job" ] || say "warning: $colmet_job is not executable on this machine; install colmet on every node"
[ -z "$config" ] || [[ $config == /* ]] || die "--config must be an absolute path"

start_args=() stop_args=()
[ -z "$config" ] || start_args+=("--config=$config")
[ -z "$run_dir" ] || { start_args+=("--run-dir=$run_dir"); stop_args+=("--run-dir=$run_dir"); }
[ -z "$log_file" ] || { start_args+=("--log-file=$log_file"); stop_args+=("--log-file=$log_file"); }
[ -z "$stop_timeout" ] || stop_args+=("--timeout=$stop_timeout")

# Check everything before changing anything.
src_jrm=$etc/$jrm_name
copy=$etc/$copy_name
if [ "$do_jrm" -eq 1 ]; then
  [ -f "$src_jrm" ] || die "no $src_jrm"
  for anchor in '^        ## Write environment file$' "^        system_with_log\\('echo THAWED > '" \
                '^my \$Enable_perf_event_cg = "[A-Z]*";$'; do
    [ "$(grep -cE "$anchor" "$src_jrm")" -eq 1 ] ||
      die "$src_jrm: the line /$anchor/ is not there exactly once (not OAR 2.5.9's JRM?); apply hooks/oar/jrm_*_hook.pl by hand"
  done
fi
if [ "$do_prolog" -eq 1 ]; then
  for key in PROLOGUE_EXEC_FILE EPILOGUE_EXEC_FILE; do
    line=$(conf_get $key)
    [ -z "$line" ] || die "$conf already sets $line: call hooks/oar/prologue and epilogue from those scripts instead"
  done
fi
if [ "$do_rule" -eq 1 ]; then
  command -v "$oaradmissionrules" >/dev/null || die "no oaradmissionrules (oar-server) on this machine; or use --no-admission-rule"
  rdir=$(rule_tmpdir)
  trap 'rm -rf "$rdir"' EXIT
  rule_show "$rdir/r16.pl"
  grep -qE '^my @types = \($' "$rdir/r16.pl" ||
    die "admission rule 16 has no line 'my @types = (': add $(cat "$here/admission_rule_16.pl") by hand"
  if grep -q 'colmet' "$rdir/r16.pl"; then
    die "admission rule 16 already mentions colmet: remove that first, or use --no-admission-rule"
  fi
fi

mkdir -p "$state"
chmod 700 "$state"
{
  echo "# colmet OAR hooks, installed $(date -u +%FT%TZ) by $here/install.sh"
  echo "CONF=$(printf '%q' "$conf")"
} > "$record"
conf_keys=""

if [ "$do_jrm" -eq 1 ]; then
  init_hook=$(sed -e "s|@COLMET_JOB@|$(perl_quote "$colmet_job" | sed 's/[|&\\]/\\&/g')|" \
                  -e "s|@COLMET_START_ARGS@|$(perl_list "${start_args[@]}" | sed 's/[|&\\]/\\&/g')|" \
                  "$here/jrm_init_hook.pl")
  clean_hook=$(sed -e "s|@COLMET_JOB@|$(perl_quote "$colmet_job" | sed 's/[|&\\]/\\&/g')|" \
                   -e "s|@COLMET_STOP_ARGS@|$(perl_list "${stop_args[@]}" | sed 's/[|&\\]/\\&/g')|" \
                   "$here/jrm_clean_hook.pl")
  # The start list may be empty: "'--spec='.$s, )" is valid Perl, so is "@x, )".
  INIT_HOOK=$init_hook CLEAN_HOOK=$clean_hook perl -0777 -pe '
    s/^(my \$Enable_perf_event_cg = )"[A-Z]*";$/$1"YES"; # colmet: perf_event enabled by hooks\/oar\/install.sh/m or die "perf_event line\n";
    s/^(        ## Write environment file\n)/$ENV{INIT_HOOK}\n$1/m or die "init anchor\n";
    s/^(        system_with_log\(\x27echo THAWED > \x27)/$ENV{CLEAN_HOOK}\n$1/m or die "clean anchor\n";
  ' "$src_jrm" > "$copy.tmp"
  perl -c "$copy.tmp" >/dev/null 2>&1 || { rm -f "$copy.tmp"; die "the JRM with the hooks does not compile (perl -c $copy.tmp)"; }
  chmod 0644 "$copy.tmp"
  mv "$copy.tmp" "$copy"
  {
    echo "JRM_COPY=$(printf '%q' "$copy")"
    echo "JRM_COPY_SHA=$(sha "$copy")"
  } >> "$record"
  say "wrote $copy (colmet hooks, perf_event enabled), from $src_jrm"
  conf_keys+=" JOB_RESOURCE_MANAGER_FILE"
fi

prolog_files=""
if [ "$do_prolog" -eq 1 ]; then
  for f in prologue epilogue; do
    sed -e "s|@COLMET_JOB_SH@|$(sh_list "$colmet_job" | sed 's/[|&\\]/\\&/g')|" \
        -e "s|@COLMET_START_ARGS_SH@|$(sh_list "${start_args[@]}" | sed 's/[|&\\]/\\&/g')|" \
        -e "s|@COLMET_STOP_ARGS_SH@|$(sh_list "${stop_args[@]}" | sed 's/[|&\\]/\\&/g')|" \
        -e "s|@COLMET_RUN_DIR_SH@|$(sh_list "${run_dir:-/run/colmet}" | sed 's/[|&\\]/\\&/g')|" \
        "$here/$f" > "$etc/colmet_$f"
    chmod 0755 "$etc/colmet_$f"
    bash -n "$etc/colmet_$f" || die "$etc/colmet_$f: syntax error"
    prolog_files+="${prolog_files:+ }$etc/colmet_$f"
  done
  echo "PROLOG_FILES=$(printf '%q' "$prolog_files")" >> "$record"
  say "wrote $prolog_files (copy them to every node: OAR runs them on the job's first node)"
  conf_keys+=" PROLOGUE_EXEC_FILE EPILOGUE_EXEC_FILE"
fi

if [ -n "$conf_keys" ]; then
  backup "$conf" oar.conf
  [ "$do_jrm" -eq 1 ] && conf_set JOB_RESOURCE_MANAGER_FILE "$copy"
  if [ "$do_prolog" -eq 1 ]; then
    conf_set PROLOGUE_EXEC_FILE "$etc/colmet_prologue"
    conf_set EPILOGUE_EXEC_FILE "$etc/colmet_epilogue"
  fi
  {
    echo "CONF_KEYS=$(printf '%q' "${conf_keys# }")"
    echo "CONF_SHA=$(sha "$conf")"
  } >> "$record"
  say "set${conf_keys} in $conf (backup in $state/oar.conf.orig)"
fi

if [ "$do_rule" -eq 1 ]; then
  cp "$rdir/r16.pl" "$state/rule16.orig"
  perl -pe 'BEGIN { open(my $f, "<", shift(@ARGV)) or die; local $/; $::add = <$f>; }
            $_ .= $::add if /^my \@types = \($/;' "$here/admission_rule_16.pl" "$rdir/r16.pl" > "$rdir/new.pl"
  chown oar "$rdir/new.pl" 2>/dev/null || true
  rule_modify "$rdir/new.pl" || die "oaradmissionrules --modify 16 failed; run $0 --uninstall to undo the rest"
  rule_show "$rdir/now.pl"
  {
    echo "RULE16=1"
    echo "RULE16_SHA=$(sha "$rdir/now.pl")"
  } >> "$record"
  say "admission rule 16 now accepts -t colmet and -t colmet=SPEC (backup in $state/rule16.orig)"
fi

say "installed; colmet-job: $colmet_job"
if [ "$do_jrm" -eq 1 ]; then
  cat <<EOF
install.sh: NOTE: every node must have the perf_event cgroup v1 hierarchy mounted at
  /sys/fs/cgroup/perf_event BEFORE the first JRM init after boot, e.g. at boot:
    mkdir -p /sys/fs/cgroup/perf_event
    mountpoint -q /sys/fs/cgroup/perf_event || mount -t cgroup -o perf_event cgroup /sys/fs/cgroup/perf_event
  otherwise the JRM exits 4 and the node becomes Suspected. A node where the JRM already
  ran since boot without perf_event needs, while no job runs on it:
    ln -s /sys/fs/cgroup/perf_event /dev/oar_cgroups_links/perf_event
EOF
  if ! grep -qE '^cgroup [^ ]+ cgroup [^ ]*perf_event' /proc/mounts; then
    echo "install.sh: NOTE: perf_event is not mounted on this machine"
  fi
fi
