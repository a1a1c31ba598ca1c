#!/bin/sh
# check_libs.sh COLMET_CTL COLMET_NODE: colmet-ctl, a small client users run,
# needs no PMU resolver: it must not load libpfm4, which colmet-node (built
# with it) does load, the proof that this check sees a linked libpfm.
ctl=$1 node=$2
if ldd "$ctl" | grep -q 'libpfm'; then
  echo "FAIL: $ctl loads libpfm:"; ldd "$ctl" | grep libpfm; exit 1
fi
if ! ldd "$node" | grep -q 'libpfm'; then
  echo "FAIL: $node does not load libpfm, so this check proves nothing"; exit 1
fi
echo "ok: colmet-ctl loads no libpfm; colmet-node does"
