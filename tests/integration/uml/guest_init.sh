#!/bin/bash
# pid 1 of the user-mode Linux guest booted by uml_run.sh: a pure cgroup v2
# machine of its own (proc, sysfs, cgroup2, tmpfs /run /tmp /dev/shm, devpts,
# the loopback; what the command needs of the machine's /tmp bound in), then
# the command uml_run.sh wrote in $COLMET_UML_DIR/env, its output and exit
# status written back there, and power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
dir=${COLMET_UML_DIR:?}
unset COLMET_UML_DIR
{
  mount -t proc proc /proc
  mount -t sysfs sysfs /sys
  mount -t cgroup2 cgroup2 /sys/fs/cgroup
  mount -t tmpfs -o mode=0755 tmpfs /run
  # The machine's /tmp entries the command needs (uml_run.sh lists them),
  # bound into the guest's own /tmp.
  mkdir /run/host-tmp && mount --bind /tmp /run/host-tmp
  mount -t tmpfs -o mode=1777 tmpfs /tmp
  while read -r entry; do
    [ -n "$entry" ] && mkdir -p "/tmp/$entry" && mount --bind "/run/host-tmp/$entry" "/tmp/$entry"
  done <"$dir/tmp_entries"
  mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
  # Pseudo-terminals (script(1) gives srun one in the Slurm test).
  mkdir -p /dev/pts && mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
  [ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
  ip link set lo up
  # The guest has no network device: nothing can leave it. An address of
  # the documentation range on its loopback makes getaddrinfo's
  # AI_ADDRCONFIG see an IPv4 address (slurmctld binds its port with it).
  ip addr add 192.0.2.1/32 dev lo
} >"$dir/init.log" 2>&1
export COLMET_UML=1 HOME=/root
# shellcheck source=/dev/null
. "$dir/env"
hostname "$COLMET_UML_HOSTNAME"
unset COLMET_UML_HOSTNAME
"${cmd[@]}" >"$dir/guest.log" 2>&1 </dev/null
echo $? >"$dir/guest.rc"
sync
echo o >/proc/sysrq-trigger
sleep 10
