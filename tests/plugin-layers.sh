#!/bin/sh
# make check: the daemon's files call each other one way only, down the
# order plugin/dlmd.h lists (DEPENDENCIES); a file below reports up only
# through the function tables it is given.  From the built objects of
# plugin/dlmd: for every symbol an object uses that another object
# defines, the definer must stand lower in the order (or in the same
# group, for the groups that say so).  Fails on a call up the order, so
# a cycle like client.c <-> cluster.c cannot come back unnoticed.
# The same rule holds in lowcomms/ (its file-top essays): lowcomms.c
# drives the transports (sock.c, usrsctp.c), which use addr.c; framing
# (frame.c) and sealing (auth.c) are called and return, and key memory
# (secret.c) below them all; none of them calls lowcomms.c back by name.  So a lock request or a node death
# (READING.md) goes down through the files and comes back only by
# returns and the tables.
top_builddir=${top_builddir:-.}
top_builddir=$(cd "$top_builddir" && pwd) || exit 2
# rank: smaller is higher up; "=" after a rank: calls within it are fine
rank_of() {
	case $1 in
	main|daemon) echo 0= ;;
	ctl|metrics|metrics-http) echo 1= ;;
	client) echo 2 ;;
	view) echo 3 ;;
	cluster) echo 4 ;;
	fence) echo 5 ;;
	engine) echo 6 ;;
	comms) echo 7 ;;
	cpgmsg|fence-policy|member-policy|config|log|u32map|slab|http-parse) echo 8= ;;
	*) echo "" ;;
	esac
}
# lowcomms/: the context, the transports, then what they all use
rank_of_lowcomms() {
	case $1 in
	lowcomms) echo 0 ;;
	sock|usrsctp) echo 1= ;;
	frame|auth|addr) echo 2= ;;
	secret) echo 3 ;;
	*) echo "" ;;
	esac
}

# check DIR PREFIX RANKFN WHERE: every object DIR/PREFIX*.o calls only
# objects of the same set that stand lower in RANKFN's order
check() {
	dir=$1 prefix=$2 rankfn=$3 where=$4
	cd "$dir" || return 2
	objs=$(ls "$prefix"*.o 2>/dev/null)
	[ -n "$objs" ] || { echo "plugin-layers: no $dir/$prefix*.o (build first)"; return 77; }
	defs=$(mktemp) || return 2
	for o in $objs; do
		n=${o#"$prefix"}
		n=${n%.o}
		nm -g --defined-only "$o" | awk -v n="$n" 'NF == 3 { print $3, n }'
	done | sort >"$defs"
	bad=
	for o in $objs; do
		n=${o#"$prefix"}
		n=${n%.o}
		r=$($rankfn "$n")
		[ -n "$r" ] || { bad="$bad
$n: not in the order of $where (add it there and here)"; continue; }
		for s in $(nm -u "$o" | awk '{ print $2 }'); do
			t=$(awk -v s="$s" '$1 == s { print $2; exit }' "$defs")
			[ -n "$t" ] && [ "$t" != "$n" ] || continue
			rt=$($rankfn "$t")
			if [ "${rt%=}" -lt "${r%=}" ] ||
			   { [ "${rt%=}" -eq "${r%=}" ] && [ "$r" = "${r%=}" ]; }; then
				bad="$bad
$n.c calls $s of $t.c, which stands above it"
			fi
		done
	done
	rm -f "$defs"
	if [ -n "$bad" ]; then
		echo "plugin-layers: calls up the order of $where:$bad"
		return 1
	fi
	echo "plugin-layers: $(echo "$objs" | wc -w) files in the order of $where call only down it"
	return 0
}

check "$top_builddir/plugin" dlmd- rank_of plugin/dlmd.h
rv=$?
[ $rv -eq 0 ] || exit $rv
# libtool keeps the library's objects in .libs
lc="$top_builddir/lowcomms/.libs"
[ -d "$lc" ] || lc="$top_builddir/lowcomms"
check "$lc" liblowcomms_la- rank_of_lowcomms lowcomms/
