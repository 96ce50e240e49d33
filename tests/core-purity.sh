#!/bin/sh
# make check: core/ is a pure state machine.  It must not touch sockets,
# threads, clocks, files or the process's standard streams, nor read the
# environment; everything comes in through its API.  This fails if a
# forbidden call or header appears in core/.
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
cd "$top_srcdir/core" || exit 2
bad=$(grep -nE \
	'#include <(sys/socket|netinet/|arpa/|pthread|threads|time|sys/time|fcntl|unistd|poll|sys/epoll|dirent|signal)\.h>|(^|[^.>_[:alnum:]])(socket|connect|accept|bind|listen|send|recv|sendmsg|recvmsg|pthread_[a-z_]+|clock_gettime|gettimeofday|time|fopen|fclose|fread|fwrite|fprintf|printf|puts|open|close|read|write|getenv|sleep|usleep|nanosleep|rand|srand|random)[[:space:]]*\(' \
	*.c *.h | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)')
if [ -n "$bad" ]; then
	echo "core-purity: core/ must do no I/O, threads or clocks:"
	echo "$bad"
	exit 1
fi
n=$(ls *.c | wc -l)
echo "core-purity: $n files in core/ use no sockets, threads, clocks, files or environment"
exit 0
