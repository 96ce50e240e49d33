#!/bin/sh
# tests/test-cluster-soak.sh - the short soak of make check: one round of
# every fault kind of tests/cluster-soak (a whole-node kill, a dlmd-only
# kill, a cut past the token, a client kill, a sub-token blip, a split
# that merges back, a SIGSTOPped dlmd, a death inside a recovery) on the
# 3-node cluster under the lock workload, each round judged by the
# history checker (tests/cluster-client check: no overlapping
# incompatible holds, no lost or missing increment, no LVB that went
# backwards).  The long soak is tests/cluster-soak [ROUNDS] by hand.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
export top_srcdir top_builddir
SOAK_WORK_MS=${SOAK_WORK_MS:-2500} exec "$top_srcdir/tests/cluster-soak" 1
