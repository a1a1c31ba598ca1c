#!/bin/sh
# check_symbols.sh PLUGIN: spank_colmet.so exports exactly the SPANK plugin
# identity and slurm_spank_* callbacks, and its undefined symbols are only
# Slurm's (resolved from srun/slurmd/slurmstepd at load) and the C library's.
set -u
so=$1
status=0
defined=$(nm -D --defined-only "$so" | awk '{print $3}' | sort)
for want in plugin_name plugin_type plugin_version spank_plugin_version slurm_spank_init \
            slurm_spank_init_post_opt slurm_spank_task_init_privileged slurm_spank_task_exit slurm_spank_exit \
            slurm_spank_job_prolog slurm_spank_job_epilog; do
    printf '%s\n' "$defined" | grep -qx "$want" || { echo "FAIL: $want is not exported"; status=1; }
done
extra=$(printf '%s\n' "$defined" | grep -Ev '^(plugin_name|plugin_type|plugin_version|spank_plugin_version|slurm_spank_[a-z_]+)$' || true)
if [ -n "$extra" ]; then
    echo "FAIL: unexpected exported symbols:"; printf '%s\n' "$extra"; status=1
fi
# Undefined: Slurm's API (spank_*, slurm_*) and glibc (versioned GLIBC_*).
# Weak references (w) may stay unresolved.
undef=$(nm -D --undefined-only "$so" | awk '$1 == "U" {print $2}' | grep -Ev '^(spank_[a-z_]+|slurm_(info|error|debug|verbose)[0-9]*)$' \
        | grep -Ev '@GLIBC_[0-9.]+$' || true)
if [ -n "$undef" ]; then
    echo "FAIL: undefined symbols that neither Slurm nor libc provide:"; printf '%s\n' "$undef"; status=1
fi
needed=$(objdump -p "$so" | awk '/NEEDED/ {print $2}')
for lib in $needed; do
    case $lib in
        libc.so.*|libm.so.*|ld-linux*) ;;
        *) echo "FAIL: the plugin needs $lib (only libc/libm expected)"; status=1 ;;
    esac
done
[ "$status" -eq 0 ] && echo "spank_colmet.so: exports and imports OK"
exit "$status"
