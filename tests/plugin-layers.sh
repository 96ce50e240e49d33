#!/bin/sh
# make check: the daemon's files call each other one way only, down the
# order plugin/dlmd.h lists (DEPENDENCIES); a file below reports up only
# through the function tables it is given.  From the built objects of
# plugin/dlmd: for every symbol an object uses that another object
# defines, the definer must stand lower in the order (or in the same
# group, for the groups that say so).  Fails on a call up the order, so
# a cycle like client.c <-> cluster.c cannot come back unnoticed.
top_builddir=${top_builddir:-.}
cd "$top_builddir/plugin" || exit 2
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
	cpgmsg|fence-policy|member-policy|config|log|u32map|http-parse) echo 8= ;;
	*) echo "" ;;
	esac
}
objs=$(ls dlmd-*.o 2>/dev/null)
[ -n "$objs" ] || { echo "plugin-layers: no plugin/dlmd-*.o (build dlmd first)"; exit 77; }
defs=$(mktemp) || exit 2
trap 'rm -f "$defs"' EXIT
for o in $objs; do
	n=${o#dlmd-}
	n=${n%.o}
	nm -g --defined-only "$o" | awk -v n="$n" 'NF == 3 { print $3, n }'
done | sort >"$defs"
bad=
for o in $objs; do
	n=${o#dlmd-}
	n=${n%.o}
	r=$(rank_of "$n")
	[ -n "$r" ] || { bad="$bad
$n: not in the order of plugin/dlmd.h (add it there and here)"; continue; }
	for s in $(nm -u "$o" | awk '{ print $2 }'); do
		t=$(awk -v s="$s" '$1 == s { print $2; exit }' "$defs")
		[ -n "$t" ] && [ "$t" != "$n" ] || continue
		rt=$(rank_of "$t")
		if [ "${rt%=}" -lt "${r%=}" ] ||
		   { [ "${rt%=}" -eq "${r%=}" ] && [ "$r" = "${r%=}" ]; }; then
			bad="$bad
$n.c calls $s of $t.c, which stands above it"
		fi
	done
done
if [ -n "$bad" ]; then
	echo "plugin-layers: calls up the order of plugin/dlmd.h:$bad"
	exit 1
fi
echo "plugin-layers: $(echo "$objs" | wc -w) files of dlmd call only down the order"
exit 0
