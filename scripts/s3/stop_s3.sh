#!/bin/bash
# Stops the daemons started by start_s3.sh for the same CEPH_DIR.
D="${CEPH_DIR:?set CEPH_DIR}"
for p in rgw osd mon; do [ -f $D/$p.mypid ] && kill $(cat $D/$p.mypid) 2>/dev/null; done
for p in rgw osd mon; do for i in $(seq 1 50); do [ -f $D/$p.mypid ] && ps -p $(cat $D/$p.mypid) >/dev/null || break; sleep 0.2; done; done
for p in rgw osd mon; do [ -f $D/$p.mypid ] && ps -p $(cat $D/$p.mypid) >/dev/null && kill -9 $(cat $D/$p.mypid) 2>/dev/null; rm -f $D/$p.mypid; done
exit 0
