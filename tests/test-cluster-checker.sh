#!/bin/sh
# tests/test-cluster-checker.sh - the history checker of the cluster tests
# (tests/cluster-client check) judged on hand-written logs: it must pass
# every history a fault can legally leave behind (a writer killed between
# its B and X lines, after writing the file or before; a writer killed
# before its unlock returned; an unlock that did not end in EUNLOCK) and
# report every real violation (an LVB that went backwards, an LVB ahead
# of the file, overlapping holds, including the hold of a client that
# died inside it, a lost update, a hole in the chain, a file that does not
# match).  Issue 11 item 5: before, a writer killed between writing the
# file and logging it was reported as a violation.
set -u
top_builddir=${top_builddir:-.}
CLIENT=$top_builddir/tests/cluster-client
EUNLOCK=65538
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmchk.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
rc=0
n=0

# case NAME EXPECT FILEVALUE: the logs are the here-documents written by
# the caller into $dir/logs before; EXPECT is pass or the text a
# VIOLATION line must contain
case_() {
	n=$((n + 1))
	printf '%020d\n' "$3" >"$dir/counters/r0"
	out=$("$CLIENT" check "$dir" 1 2>&1)
	st=$?
	if [ "$2" = pass ]; then
		if [ $st -ne 0 ]; then
			echo "FAIL $n $1: expected no violation, got:"; echo "$out"; rc=1
		else
			echo "ok $n $1"
		fi
	else
		if [ $st -ne 1 ] || ! echo "$out" | grep "^VIOLATION" | grep -qF "$2"; then
			echo "FAIL $n $1: expected a violation with '$2', got (exit $st):"
			echo "$out"; rc=1
		else
			echo "ok $n $1"
		fi
	fi
}
fresh() {
	rm -rf "$dir/logs" "$dir/counters"
	mkdir -p "$dir/logs" "$dir/counters"
}
# one clean EX increment OLD -> OLD+1 at time T by a client whose unlock
# ended in STATUS (default EUNLOCK)
ex() { # OLD T [STATUS]
	printf 'G 0 EX %s\nB 0 %s %s\nX 0 %s %s %s\nH 0 EX %s %s\nU 0 %s\n' \
		"$2" "$1" "$(($2 + 1))" "$1" "$(($1 + 1))" "$(($2 + 2))" \
		"$2" "$(($2 + 5))" "${3:-$EUNLOCK}"
}

fresh
ex 0 100 >"$dir/logs/a"
ex 1 200 >>"$dir/logs/a"
printf 'S 2 0 0 0\n' >>"$dir/logs/a"
case_ "clean increments" pass 2

fresh
ex 0 100 >"$dir/logs/a"
printf 'G 0 EX 120\nB 0 1 121\n' >>"$dir/logs/a"		# killed after B
{ printf 'G 0 EX 200\nL 0 1 2\n'; ex 2 200 | sed 1d; } >"$dir/logs/b"
case_ "writer killed after writing the file, before its X" pass 3

fresh
ex 0 100 >"$dir/logs/a"
printf 'G 0 EX 120\nB 0 1 121\n' >>"$dir/logs/a"		# killed before writing
ex 1 200 >"$dir/logs/b"
case_ "writer killed before writing the file" pass 2

fresh
ex 0 100 >"$dir/logs/a"
printf 'G 0 EX 120\nB 0 1 121\n' >>"$dir/logs/a"
case_ "the file one above the chain by a dead writer" pass 2

fresh
ex 0 100 >"$dir/logs/a"
printf 'G 0 EX 120\nB 0 1 121\nX 0 1 2 122\nH 0 EX 120 125\n' >>"$dir/logs/a"	# killed in unlock
{ printf 'G 0 EX 200\nL 0 1 2\n'; ex 2 200 | sed 1d; } >"$dir/logs/b"
case_ "writer killed before its unlock returned" pass 3

fresh
ex 0 100 >"$dir/logs/a"
ex 1 120 5 >>"$dir/logs/a"				# unlock status not EUNLOCK
{ printf 'G 0 PR 200\nL 0 1 2\nH 0 PR 200 205\n'; } >"$dir/logs/b"
case_ "an unlock that did not end in EUNLOCK" pass 2

fresh
ex 0 100 >"$dir/logs/a"
ex 1 120 >>"$dir/logs/a"
{ printf 'G 0 EX 200\nL 0 1 2\n'; ex 2 200 | sed 1d; } >"$dir/logs/b"
case_ "an LVB that went backwards" "LVB 1 but file 2" 3

fresh
ex 0 100 >"$dir/logs/a"
ex 1 120 >>"$dir/logs/a"
printf 'G 0 PR 200\nL 0 1 2\nH 0 PR 200 205\n' >"$dir/logs/b"
case_ "a reader given an LVB that went backwards" "LVB 1 but file 2" 2

fresh
ex 0 100 >"$dir/logs/a"
printf 'L 0 3 1\n' >"$dir/logs/final-1"
case_ "an LVB ahead of the file" "LVB 3 but file 1" 1

fresh
ex 0 100 >"$dir/logs/a"
ex 1 120 >>"$dir/logs/a"
printf 'G 0 EX 300\nB 0 2 301\n' >>"$dir/logs/a"	# died: file maybe 3
ex 2 400 >"$dir/logs/b"					# read 2: did not write
ex 3 500 >>"$dir/logs/b"
printf 'G 0 EX 600\nL 0 2 4\n' >"$dir/logs/c"
case_ "a dead writer does not excuse a lag past a written LVB" "LVB 2 but file 4" 4

fresh
ex 0 100 >"$dir/logs/a"
ex 0 103 >"$dir/logs/b"
case_ "two writers read the same value" "incremented twice" 1

fresh
ex 0 100 >"$dir/logs/a"
ex 2 200 >>"$dir/logs/a"
case_ "a hole in the chain" "value 1 was never incremented" 3

fresh
ex 0 100 >"$dir/logs/a"
case_ "a file that does not match" "file 3, increments end at 1" 3

fresh
ex 0 100 >"$dir/logs/a"
printf 'G 0 PR 103\nH 0 PR 103 104\n' >"$dir/logs/b"
case_ "overlapping holds" "overlaps" 1

fresh
printf 'G 0 EX 100\nB 0 0 101\nX 0 0 1 150\n' >"$dir/logs/a"	# died holding
printf 'G 0 PR 140\nH 0 PR 140 145\n' >"$dir/logs/b"
case_ "the hold of a client that died inside it" "EX [100,150] overlaps PR [140,145]" 1

fresh
printf 'G 0 EX 100\nB 0 0 101\nX 0 0 1 150\n' >"$dir/logs/a"
printf 'G 0 PR 160\nH 0 PR 160 165\n' >"$dir/logs/b"
case_ "a dead client's hold ends with its last act" pass 1

fresh
printf 'Q 0 junk\n' >"$dir/logs/a"
case_ "a line the checker does not know" "does not know" 0

echo "checker: $n cases"
exit $rc
