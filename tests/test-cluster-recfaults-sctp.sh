#!/bin/sh
# tests/test-cluster-recfaults-sctp.sh - tests/test-cluster-recfaults.sh
# over SCTP on two networks (usrsctp), with its step D (UNREACH over
# SCTP).  ~2.5 min.
RECFAULTS_PROTO=sctp
export RECFAULTS_PROTO
exec "$(cd "$(dirname "$0")" && pwd)/test-cluster-recfaults.sh" "$@"
