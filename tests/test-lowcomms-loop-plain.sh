#!/bin/sh
# make check: the loopback tests once more in plaintext (crypto = none), as
# dlm.conf allows; tests/test-lowcomms-loop itself runs with a cluster key.
top_builddir=${top_builddir:-.}
LC_TEST_SECURITY=none exec "$top_builddir/tests/test-lowcomms-loop"
