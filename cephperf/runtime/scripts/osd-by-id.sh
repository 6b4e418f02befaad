#!/bin/bash
# ceph-osd for upstream's qa/standalone tests in ci/upstream-standalone's
# candidate and mixed modes. Copied as `ceph-osd` into the test's working
# directory, which upstream's helpers put first on PATH: every ceph-osd the
# test runs (mkfs and daemon alike) comes here and is exec'ed as the build
# its OSD id chooses. The id is read as Ceph reads it (src/common/ceph_argparse.cc):
# -i N, --id N, --user N, --name osd.N, -n osd.N, each also as OPT=VALUE;
# the last one given wins, and nothing after `--` is an option.
#
#   CEPH_PERF_OSD_RULE        mixed: stock for even ids, the candidate for odd ones
#                             candidate: the candidate for every id
#   CEPH_PERF_STOCK_OSD       the stock ceph-osd
#   CEPH_PERF_CANDIDATE_OSD   the candidate's ceph-osd
#   CEPH_PERF_CANDIDATE_LIBS  its LD_LIBRARY_PATH (empty: none)
#   CEPH_PERF_OSD_LOG         each call appends "ID BUILD mkfs|run" here
#
# A call naming no OSD id (--version, --help) runs the build of even ids.
set -u

id=""
args=("$@")
while [ $# -gt 0 ]; do
    case "$1" in
        --) break ;;
        -i|--id|--user) id=${2-}; shift ;;
        -i=*|--id=*|--user=*) id=${1#*=} ;;
        -n|--name) id=${2-}; id=${id#osd.}; shift ;;
        -n=*|--name=*) id=${1#*=}; id=${id#osd.} ;;
    esac
    shift
done

case "$id" in
    ''|*[!0-9]*) number=0 ;;
    *) number=$id ;;
esac

if [ "${CEPH_PERF_OSD_RULE:-}" = candidate ] || { [ "${CEPH_PERF_OSD_RULE:-}" = mixed ] && [ $((10#$number % 2)) = 1 ]; }; then
    build=candidate
    binary=$CEPH_PERF_CANDIDATE_OSD
    if [ -n "${CEPH_PERF_CANDIDATE_LIBS:-}" ]; then
        export LD_LIBRARY_PATH=$CEPH_PERF_CANDIDATE_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
elif [ "${CEPH_PERF_OSD_RULE:-}" = mixed ]; then
    build=stock
    binary=$CEPH_PERF_STOCK_OSD
else
    echo "ceph-osd (ci/upstream-standalone's wrapper): CEPH_PERF_OSD_RULE must be mixed or candidate, not '${CEPH_PERF_OSD_RULE:-}'" >&2
    exit 2
fi

action=run
for a in "${args[@]}"; do
    [ "$a" = -- ] && break
    [ "$a" = --mkfs ] && action=mkfs
done
if [ -n "${CEPH_PERF_OSD_LOG:-}" ]; then
    echo "${id:-none} $build $action" >> "$CEPH_PERF_OSD_LOG"
fi
exec "$binary" "${args[@]}"
