#!/bin/sh
# backstep validate speed: checked instructions per second of each driver
# on the same programs, against the raw single-step rate of each mechanism,
# in the same run (README.md "backstep validate speed").
#   bench/validate_speed.sh [BUILD_DIR]
# Drivers: ptrace (--driver ptrace), inproc (the default: int3s planted
# where each instruction goes, the trap flag where that cannot be told),
# inproc-tf (the same with every step by the trap flag:
# BACKSTEP_INPROC_STEP=tf). Programs: a fixture (leaf, gcc -O2), `ls -l /`
# and `md5sum` of the ls executable (about a million checked instructions,
# most of them in md5's loop), and `apt-config dump` checked in
# libapt-pkg (call-heavy C++). The program's own output is discarded; the
# JSON report is read from the end of the output.
# With COMPARE_INPROC_LIB set to another build's libbackstep_inproc.so, an
# "inproc-cmp" row runs the in-process driver with that library too, in
# the same run (a before/after comparison on a machine whose load moves).
set -eu
B=${1:-build}
BK=$B/tools/backstep
RAW=$B/bench/bench_validate_rawstep
for f in "$BK" "$RAW" "$B/fixtures/fix_leaf_gcc_O2_nofp"; do
	[ -x "$f" ] || { echo "validate_speed.sh: $f is not built" >&2; exit 2; }
done
PY=$(command -v python3)

echo "== raw single-step rate (nothing checked)"
"$RAW" 100000

report() { # NAME DRIVER -- the JSON on stdin
	"$PY" -c '
import json, sys
t = sys.stdin.read()
i = t.rfind("{\"program\"")
if i < 0:
    print("%-14s %-10s no report" % (sys.argv[1], sys.argv[2])); sys.exit(0)
r = json.loads(t[i:]); s = r["stats"]
print("%-14s %-10s %-7s %9d checked %8.3f s %9.0f checked/s%s" % (sys.argv[1], sys.argv[2],
      r["driver"], s["instructions_checked"], s["seconds"], s["checked_per_second"],
      "  (" + r["driver_note"] + ")" if r.get("driver_note") else ""))' "$1" "$2"
}

run() { # NAME [--only MODULE] PROGRAM...
	name=$1
	shift
	only=
	if [ "$1" = --only ]; then
		only="--only $2"
		shift 2
	fi
	# shellcheck disable=SC2086 # ONLY is two words or none
	"$BK" validate --json -q $only --driver ptrace -- "$@" 2>/dev/null | report "$name" ptrace
	# shellcheck disable=SC2086
	"$BK" validate --json -q $only -- "$@" 2>/dev/null | report "$name" inproc
	# shellcheck disable=SC2086
	BACKSTEP_INPROC_STEP=tf "$BK" validate --json -q $only -- "$@" 2>/dev/null | report "$name" inproc-tf
	if [ -n "${COMPARE_INPROC_LIB:-}" ]; then
		# shellcheck disable=SC2086
		BACKSTEP_INPROC_LIB=$COMPARE_INPROC_LIB "$BK" validate --json -q $only -- "$@" 2>/dev/null |
			report "$name" inproc-cmp
	fi
}

echo "== checked instructions per second"
run leaf "$B/fixtures/fix_leaf_gcc_O2_nofp"
run "ls -l /" ls -l /
run "md5sum ls" md5sum "$(command -v ls)"
# Call-heavy C++ (libapt-pkg: about 2 M checked instructions, deep stacks,
# a PLT stub in every other call).
if command -v apt-config >/dev/null; then
	run "apt-config" --only libapt-pkg.so.6.0 apt-config dump
fi
