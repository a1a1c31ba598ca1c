#!/usr/bin/env bash
# Check the C++ style: clang-format (.clang-format) on every C++ file of the
# tree, and clang-tidy (.clang-tidy) on the C++ sources changed since the
# commit named in .ci/tidy-baseline, the last tree checked whole. clang-tidy
# takes about 10 minutes for the whole tree on 2 cores, which is too long for
# every test run (CTest's `style` test runs this script without --all).
#   scripts/check-style.sh [--all] [--fix] [BUILD_DIR]
#     --all      clang-tidy on every source; when it is clean on a commit,
#                write that commit's hash as the first line of .ci/tidy-baseline
#     --fix      rewrite the files clang-format would change, instead of failing
#     BUILD_DIR  where compile_commands.json is (default: build; scripts/build.sh release writes it)
# Exit 0 when clean, 1 on a finding, 77 (CTest's skip) without clang-format,
# clang-tidy, a git checkout or BUILD_DIR/compile_commands.json.
set -uo pipefail
cd "$(dirname "$0")/.."

all=0
fix=0
build=build
for a in "$@"; do
  case "$a" in
    --all) all=1 ;;
    --fix) fix=1 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "check-style: unknown option $a" >&2; exit 64 ;;
    *) build=$a ;;
  esac
done

for tool in clang-format clang-tidy git; do
  command -v "$tool" >/dev/null || { echo "check-style: $tool is not installed (scripts/install-deps.sh test)"; exit 77; }
done
git rev-parse --git-dir >/dev/null 2>&1 || { echo "check-style: not a git checkout: nothing to compare with"; exit 77; }

status=0

# 1. Layout, every file.
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.c')
if [ "$fix" -eq 1 ]; then
  clang-format -i "${sources[@]}"
else
  bad=()
  # One clang-format per file takes about 30 s for the tree; in batches, 1 s.
  # Only when a batch fails are the files checked one by one, to name them.
  if ! printf '%s\0' "${sources[@]}" |
       xargs -0 -P "$(nproc)" -n 64 clang-format --dry-run -Werror --ferror-limit=1 >/dev/null 2>&1; then
    for f in "${sources[@]}"; do
      clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done
  fi
  if [ ${#bad[@]} -gt 0 ]; then
    echo "check-style: ${#bad[@]} file(s) not laid out as .clang-format says (scripts/check-style.sh --fix rewrites them):"
    printf '  %s\n' "${bad[@]}"
    clang-format --dry-run "${bad[0]}" 2>&1 | head -20
    status=1
  else
    echo "check-style: clang-format: ${#sources[@]} files as .clang-format says"
  fi
fi

# 2. clang-tidy on the sources in the compile database: all, or those changed
#    since the baseline (a changed header brings the source of the same name).
db="$build/compile_commands.json"
if [ ! -f "$db" ]; then
  echo "check-style: no $db (scripts/build.sh release writes it, or cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON): clang-tidy not run"
  exit $((status == 0 ? 77 : status))
fi
# A unity build (COLMET_UNITY_BUILD) compiles batches, unity_N.cxx files
# including the sources: the database clang-tidy reads names each source with
# its batch's command instead (without the GCC-only warning option the build
# adds, unknown to clang).
tidy_db=$(mktemp -d)
trap 'rm -rf "$tidy_db"' EXIT
python3 - "$db" "$tidy_db/compile_commands.json" <<'PY' || { echo "check-style: cannot read $db"; exit 1; }
import json, re, sys
out = []
for e in json.load(open(sys.argv[1])):
    if re.search(r"/Unity/unity_[^/]*\.(cxx|c)$", e["file"]):
        for src in re.findall(r'^#include "([^"]+)"', open(e["file"]).read(), re.M):
            command = e["command"].replace(e["file"], src).replace(" -Wno-subobject-linkage", "")
            out.append(dict(e, file=src, command=command))
    else:
        out.append(e)
json.dump(out, open(sys.argv[2], "w"), indent=1)
PY
# The tree's own sources (not the generated ones in the build directory).
mapfile -t known < <(python3 -c 'import json, os, subprocess, sys
tracked = set(subprocess.run(["git", "ls-files", "*.cpp"], capture_output=True, text=True).stdout.split())
for e in json.load(open(sys.argv[1])):
    f = os.path.relpath(os.path.join(e["directory"], e["file"]))
    if f in tracked:
        print(f)' "$tidy_db/compile_commands.json" | sort -u)
if [ "$all" -eq 1 ]; then
  wanted=("${known[@]}")
  scope="every source"
else
  base=$(sed -n 's/^\([0-9a-f]\{40\}\).*/\1/p' .ci/tidy-baseline 2>/dev/null | head -1)
  if [ -n "$base" ] && git cat-file -e "$base^{commit}" 2>/dev/null; then
    range=$base
    scope="the sources changed since $(git log -1 --format='%h (%s)' "$base" | cut -c1-70)"
  else
    range=HEAD~1
    scope="the sources of the last commit (the baseline in .ci/tidy-baseline is not in this clone)"
  fi
  mapfile -t changed < <({ git diff --name-only --diff-filter=AMR "$range" -- '*.cpp' '*.hpp' 2>/dev/null
                           git ls-files --others --exclude-standard -- '*.cpp' '*.hpp'; } | sed 's/\.hpp$/.cpp/' | sort -u)
  wanted=()
  for f in "${changed[@]}"; do
    [[ " ${known[*]} " == *" $f "* ]] && wanted+=("$f")
  done
fi
if [ ${#wanted[@]} -eq 0 ]; then
  echo "check-style: clang-tidy: nothing to check ($scope)"
  exit $status
fi
echo "check-style: clang-tidy on ${#wanted[@]} file(s): $scope"
log=$(mktemp)
printf '%s\n' "${wanted[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$tidy_db" --quiet >"$log" 2>&1
tidy=$?
if [ "$tidy" -ne 0 ] || grep -q "warning:\|error:" "$log"; then
  # Each finding once: a header's is reported by every source that includes it.
  grep "warning:\|error:" "$log" | sort -u >"$log.found"
  if [ -s "$log.found" ]; then
    cat "$log.found"
    echo "check-style: clang-tidy: $(wc -l <"$log.found") finding(s) above (.clang-tidy lists the checks; clang-tidy -p $build FILE shows them in context)"
  else
    tail -20 "$log"
    echo "check-style: clang-tidy failed (exit $tidy) without a finding: its output ends as above"
  fi
  rm -f "$log.found"
  status=1
else
  echo "check-style: clang-tidy: clean"
  # A whole clean tree, committed: the new baseline.
  if [ "$all" -eq 1 ] && [ "$status" -eq 0 ] && git diff --quiet HEAD -- '*.cpp' '*.hpp' '*.h' '*.c' &&
     [ -z "$(git ls-files --others --exclude-standard -- '*.cpp' '*.hpp' '*.h' '*.c')" ]; then
    head=$(git rev-parse HEAD)
    { echo "$head"; sed -n '2,$p' .ci/tidy-baseline 2>/dev/null; } >.ci/tidy-baseline.new &&
      mv .ci/tidy-baseline.new .ci/tidy-baseline
    echo "check-style: .ci/tidy-baseline now names $head (commit it)"
  fi
fi
rm -f "$log"
exit $status
