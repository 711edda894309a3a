#!/usr/bin/env bash
# Run every test: the normal build's suites, then the same suites under
# AddressSanitizer + UndefinedBehaviorSanitizer (clang, ./build-asan), then a
# short smoke run of each fuzz harness, then the AArch64 cross build's suites
# under qemu-user (./build-aarch64). Expects scripts/setup.sh to have run.
# Ends with one line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

pass=0
fail=0
count() { # count SUITE-LABEL BUILD-DIR
	local log="$2/meson-logs/testlog.json"
	[ -f "$log" ] || return
	local p f
	p=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print(sum(1 for x in r if x["result"] in ("OK","EXPECTEDFAIL")))' "$log")
	f=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print(sum(1 for x in r if x["result"] not in ("OK","EXPECTEDFAIL","SKIP")))' "$log")
	echo "test: $1: $p passed, $f failed" >&2
	pass=$((pass + p))
	fail=$((fail + f))
}

echo "== tests (gcc, debugoptimized)" >&2
meson test -C build --print-errorlogs --num-processes 2
count "normal build" build

echo "== tests under ASan+UBSan (clang)" >&2
if [ ! -f build-asan/build.ninja ]; then
	CC=clang meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debug -Dfuzz=true >build-asan.setup.log 2>&1 ||
		{ tail -n 20 build-asan.setup.log >&2; echo "test: ASan configuration failed" >&2; }
fi
ninja -C build-asan >/dev/null || { echo "test: ASan build failed" >&2; fail=$((fail + 1)); }
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	meson test -C build-asan --print-errorlogs --num-processes 2
count "ASan+UBSan build" build-asan

# The AArch64 build's suites, run under qemu-user (cross/aarch64-linux-gnu.ini;
# tests/meson.build says which suites cannot run there, and why).
echo "== tests for AArch64 under qemu-user (cross, ./build-aarch64)" >&2
a64_start=$SECONDS
if [ ! -f build-aarch64/build.ninja ]; then
	meson setup build-aarch64 --cross-file cross/aarch64-linux-gnu.ini \
		>build-aarch64.setup.log 2>&1 ||
		{ tail -n 20 build-aarch64.setup.log >&2; echo "test: AArch64 configuration failed" >&2; }
fi
ninja -C build-aarch64 >/dev/null || { echo "test: AArch64 build failed" >&2; fail=$((fail + 1)); }
meson test -C build-aarch64 --print-errorlogs --num-processes 2
count "AArch64 build (qemu-user)" build-aarch64
echo "test: the AArch64 stage took $((SECONDS - a64_start)) s" >&2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
