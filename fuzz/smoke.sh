#!/bin/sh
# Smoke run of one libFuzzer binary, for the test suite (fuzz/meson.build):
#   smoke.sh FUZZER SEED_DIR FINDINGS_DIR [SECONDS]
# Fuzzes for SECONDS (default 20) from a copy of SEED_DIR in a temporary
# directory, so the source tree is never written. A crash, leak, timeout or
# sanitizer report fails the test; its input is copied to FINDINGS_DIR
# (in the build directory) before the temporary directory goes away.
set -eu
fuzzer=$1
seeds=$2
findings=$3
seconds=${4:-20}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/backstep-smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/corpus" "$tmp/artifacts"
cp "$seeds"/* "$tmp/corpus/" 2>/dev/null || true

status=0
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
	-print_final_stats=1 -artifact_prefix="$tmp/artifacts/" \
	"$tmp/corpus" || status=$?

if [ "$status" -ne 0 ] || [ -n "$(ls -A "$tmp/artifacts")" ]; then
	mkdir -p "$findings"
	cp "$tmp/artifacts"/* "$findings/" 2>/dev/null || true
	echo "smoke.sh: $fuzzer failed (status $status); inputs kept in $findings" >&2
	# 77 would read as "skipped" to meson (libFuzzer exits 77 on some
	# deaths): a failure is a failure.
	[ "$status" -ne 0 ] && [ "$status" -ne 77 ] || status=1
fi
exit "$status"
