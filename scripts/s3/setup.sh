#!/bin/bash
# Single-node Ceph (1 mon + 1 memstore OSD) + radosgw on 127.0.0.1:$PORT, everything under $D.
# Adapted from shared/reference/ceph-s3 (the recipe measured on these machines).
set -euo pipefail
D="${CEPH_DIR:?set CEPH_DIR to a writable folder}"
PORT="${CRUCIBLE_S3_PORT:-7480}"
MON_PORT="${CRUCIBLE_S3_MON_PORT:-6789}"
rm -rf $D; mkdir -p $D/{run,log,mon,osd/ceph-0,rgw}
FSID=$(cat /proc/sys/kernel/random/uuid)
cat > $D/ceph.conf <<CONF
[global]
fsid = $FSID
mon host = v1:127.0.0.1:$MON_PORT
mon initial members = a
ms bind msgr2 = false
ms bind ipv6 = false
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
run dir = $D/run
log file = $D/log/\$name.log
admin socket = $D/run/\$name.asok
pid file = $D/run/\$name.pid
mon data = $D/mon/\$cluster-\$id
osd data = $D/osd/\$cluster-\$id
osd objectstore = memstore
memstore device bytes = ${CRUCIBLE_S3_MEMSTORE_BYTES:-1073741824}
osd journal size = 0
# The test OSD is placed in the CRUSH map by start_s3.sh; updating it again at
# boot races the monitor map ("wrong fsid") on a loaded machine.
osd crush update on start = false
osd class update on start = false
keyring = $D/keyring
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$PORT
rgw data = $D/rgw
rgw dns name = localhost
CONF
ceph-authtool --create-keyring $D/keyring --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool $D/keyring --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
monmaptool --create --add a v1:127.0.0.1:$MON_PORT --fsid $FSID $D/monmap >/dev/null
ceph-mon -c $D/ceph.conf --mkfs -i a --monmap $D/monmap --keyring $D/keyring
