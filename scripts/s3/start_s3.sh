#!/bin/bash
# Cold-starts a throwaway S3 endpoint for the tests: Ceph mon + memstore OSD +
# radosgw (which verifies SigV4) on 127.0.0.1:${CRUCIBLE_S3_PORT:-7480}, all
# state under $CEPH_DIR. Users: TESTKEY/TESTSECRET (owns the test buckets) and
# OTHERKEY/OTHERSECRET (a valid user without access to them).
# A one-node Ceph sometimes fails its first start (the OSD is refused with
# "wrong fsid"); the whole start is then tried again, up to 3 times.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export CEPH_DIR="${CEPH_DIR:?set CEPH_DIR}"
D=$CEPH_DIR
C="-c $D/ceph.conf"
PORT="${CRUCIBLE_S3_PORT:-7480}"
MON_PORT="${CRUCIBLE_S3_MON_PORT:-6789}"

wait_ports_free() {
  # A daemon of an earlier cluster still on our ports would answer with the wrong fsid.
  for i in $(seq 1 100); do
    ss -ltn | grep -qE "127\.0\.0\.1:($PORT|$MON_PORT) " || return 0
    sleep 0.2
  done
  echo "ports $PORT/$MON_PORT are still in use by another process" >&2
  return 1
}

attempt() {
  "$HERE/stop_s3.sh"
  wait_ports_free || return 1
  "$HERE/setup.sh" || return 1
  ceph-mon $C -i a -f > $D/log/mon.stdout 2>&1 & echo $! > $D/mon.mypid
  for i in $(seq 1 50); do timeout 5 ceph $C mon stat >/dev/null 2>&1 && break; sleep 0.2; done
  OSD=$(ceph $C osd create) || return 1
  ceph-osd $C -i $OSD --mkfs > /dev/null 2>&1 || return 1
  ceph $C osd crush add-bucket localhost host >/dev/null 2>&1
  ceph $C osd crush move localhost root=default >/dev/null 2>&1
  ceph $C osd crush add osd.$OSD 1.0 host=localhost >/dev/null 2>&1
  ceph-osd $C -i $OSD -f > $D/log/osd.stdout 2>&1 & echo $! > $D/osd.mypid
  radosgw $C -n client.rgw.a -f > $D/log/rgw.stdout 2>&1 & echo $! > $D/rgw.mypid
  for i in $(seq 1 80); do
    curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/ | grep -q 200 && break
    sleep 0.5
  done
  curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/ | grep -q 200 || return 1
  radosgw-admin $C user create --uid=tester --display-name=Tester --access-key=TESTKEY --secret-key=TESTSECRET >/dev/null || return 1
  radosgw-admin $C user create --uid=other --display-name=Other --access-key=OTHERKEY --secret-key=OTHERSECRET >/dev/null || return 1
}

for try in 1 2 3; do
  if attempt; then
    echo "S3 ready on http://127.0.0.1:$PORT (TESTKEY/TESTSECRET) pids: mon=$(cat $D/mon.mypid) osd=$(cat $D/osd.mypid) rgw=$(cat $D/rgw.mypid)"
    exit 0
  fi
  rm -rf "$D.failed-$try"; cp -r "$D/log" "$D.failed-$try" 2>/dev/null
  echo "S3 start attempt $try failed; logs kept in $D.failed-$try" >&2
  grep -hE "ERR|error|fail" $D/log/*.log 2>/dev/null | tail -5 >&2
done
"$HERE/stop_s3.sh"
exit 1
