#!/bin/sh
# The README's examples, as a newcomer runs them.
#
# The first command (given BACKSTEP, CRASH and README): the README must
# start with exactly it, `./scripts/setup.sh && ./build/tools/backstep run
# -- ./build/examples/crash`; run here on this build's backstep and crash
# example, it must print the crash context first (the worker thread
# received SIGSEGV, SEGV_MAPERR at 0x0), the worker's stack from measure
# through worker, then the main thread's from pthread_join down to main,
# one line on stderr, and exit as the program died (128 + SIGSEGV).
#
# The library example (examples/row_at.c), run at the first instruction of
# the demo's main (built for ARCH, the host's): on x86-64 every function
# entry has CFA = rsp+8 with the return address at CFA-8; on AArch64 CFA =
# sp+0 and the return address is still in x30, so no register is saved
# anywhere yet.
#   readme_example.sh ROW_AT DEMO ARCH [BACKSTEP CRASH README]
set -eu
row_at=$1 demo=$2 arch=$3
fail() { echo "readme_example.sh: $*"; exit 1; }

if [ $# -ge 6 ]; then
	backstep=$4 crash=$5 readme=$6
	first=$(awk '/^```sh$/ { getline; print; exit }' "$readme")
	want='./scripts/setup.sh && ./build/tools/backstep run -- ./build/examples/crash'
	[ "$first" = "$want" ] || fail "the README's first command is '$first', not '$want'"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	rc=0
	BACKSTEP_CACHE_DIR= "$backstep" run -- "$crash" >"$tmp/out" 2>"$tmp/err" || rc=$?
	cat "$tmp/out" "$tmp/err"
	[ "$rc" = 139 ] || fail "exit status $rc, not 139 (the program's death by SIGSEGV)"
	[ "$(wc -l <"$tmp/err")" = 1 ] || fail "stderr is not one line"
	grep -q '^backstep: [0-9]*: Segmentation fault (signal 11) in thread [0-9]*; stacks:$' \
		"$tmp/err" || fail "stderr does not say what happened"
	head -n1 "$tmp/out" | grep -Eq '^Thread [0-9]+ \(worker\) received SIGSEGV \(Segmentation fault, signal 11\): SEGV_MAPERR, address not mapped to object, at 0x0:$' ||
		fail "the first line is not the worker's crash context"
	sed -n 2p "$tmp/out" | grep -Eq '^#0  0x[0-9a-f]+ in measure\+0x[0-9a-f]+ \(crash\) at .*crash\.c:[0-9]+ \[initial\]$' ||
		fail "frame #0 is not measure with its line"
	sed -n 3p "$tmp/out" | grep -Eq '^#1  0x[0-9a-f]+ in worker\+0x[0-9a-f]+ \(crash\) at .*crash\.c:[0-9]+ \[cfi\]$' ||
		fail "frame #1 is not worker"
	main_tid=$(sed -n 's/^Thread \([0-9]*\) (crash):$/\1/p' "$tmp/out")
	[ -n "$main_tid" ] || fail "no stack of the main thread"
	sed -n "/^Thread $main_tid (crash):/,\$p" "$tmp/out" | grep -q ' in main+0x[0-9a-f]* (crash) at .*crash\.c:[0-9]* \[cfi\]$' ||
		fail "the main thread's stack does not reach main"
	sed -n "/^Thread $main_tid (crash):/,\$p" "$tmp/out" | grep -q 'pthread.*join' ||
		fail "the main thread is not in pthread_join"
	echo "first command: the crash context and both stacks"
fi

addr=$(nm "$demo" | awk '$3 == "main" { print "0x" $1 }')
out=$("$row_at" "$demo" "$addr")
echo "$out"
case $arch in
x86_64)
	echo "$out" | grep -qx 'CFA = rsp+8'
	echo "$out" | grep -qx 'rip saved at CFA-8'
	;;
aarch64)
	[ "$out" = 'CFA = sp+0' ] || { echo "expected exactly 'CFA = sp+0'"; exit 1; }
	;;
*)
	echo "readme_example.sh: no expectation for $arch"; exit 1
	;;
esac
if "$row_at" "$demo" 0x1 2>/dev/null; then echo "address 0x1 should have no row"; exit 1; fi
