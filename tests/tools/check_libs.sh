#!/bin/sh
# check_libs.sh PATTERN WITNESS BINARY...: no BINARY loads a shared library
# whose name matches PATTERN (grep -E), and WITNESS does: the proof that the
# check sees such a library when it is linked. Used to keep small programs
# free of what they do not need (colmet-ctl of libpfm, colmet-job and the
# time-series sink of HDF5).
pattern=$1 witness=$2
shift 2
if ! ldd "$witness" | grep -Eq "$pattern"; then
  echo "FAIL: $witness loads no library matching '$pattern', so this check proves nothing"; exit 1
fi
status=0
for bin in "$@"; do
  if ldd "$bin" | grep -Eq "$pattern"; then
    echo "FAIL: $bin loads:"; ldd "$bin" | grep -E "$pattern"; status=1
  else
    echo "ok: $(basename "$bin") loads nothing matching '$pattern'"
  fi
done
exit $status
