#!/usr/bin/env bash
# Benchmark: every thread's stack of a live process, 64 threads each blocked
# about 25 frames deep. Wall time, best of RUNS (and the median), of
#   backstep pid PID          (text, with symbols, file:line, inlined frames;
#                              the symbol memo warm after the first run)
#   backstep pid --no-cache PID  (the same, reading symbols and DWARF each time)
#   backstep pid --json PID
#   backstep pid -n PID       (no symbols: the walk alone)
#   backstep pid --no-cache PID  with /usr/lib/debug hidden (no separate debug files)
#   backstep pid --no-cache PID  with libc's debug files as shipped, and dwz'd
#   eu-stack -p PID           (with names)
#   eu-stack -p PID -q        (-q: no names)
#   gdb -batch -ex 'thread apply all bt' -p PID
# The target for backstep pid: under 5 ms wall (see bench/README.md).
#   bench/pid_threads.sh [BACKSTEP] [RUNS]        (as root, or with ptrace allowed)
set -euo pipefail
cd "$(dirname "$0")/.."
backstep=${1:-build/tools/backstep}
runs=${2:-5}
nthreads=64
depth=20 # chain frames per thread; with park, pause, the thread's start: ~25

tmp=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$tmp/threads64.c" <<'EOF'
/* NTHREADS threads, each DEPTH calls deep through three alternating
 * functions, then blocked in pause(); "ready" once all are parked. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define KEEP() __asm__ volatile("" ::: "memory")
#define NOINLINE __attribute__((noinline, noclone))

static atomic_int parked;

NOINLINE static void park(void)
{
	atomic_fetch_add(&parked, 1);
	for (;;)
		pause();
}

NOINLINE static void step_a(int id, int n);
NOINLINE static void step_b(int id, int n);
NOINLINE static void step_c(int id, int n);

static void next(int id, int n)
{
	if (n == 0)
		park();
	else if ((id + n) % 3 == 0)
		step_a(id, n - 1);
	else if ((id + n) % 3 == 1)
		step_b(id, n - 1);
	else
		step_c(id, n - 1);
}

NOINLINE static void step_a(int id, int n) { volatile int x = n; next(id, n); KEEP(); (void)x; }
NOINLINE static void step_b(int id, int n) { volatile long y = n; next(id, n); KEEP(); (void)y; }
NOINLINE static void step_c(int id, int n) { volatile char z[24] = { 0 }; next(id, n); KEEP(); (void)z; }

static void *thread_main(void *arg)
{
	next((int)(intptr_t)arg, DEPTH);
	return NULL;
}

int main(void)
{
	pthread_t t;
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t, NULL, thread_main, (void *)(intptr_t)i) != 0)
			return 1;
	while (atomic_load(&parked) < NTHREADS)
		usleep(1000);
	puts("ready");
	fflush(stdout);
	for (;;)
		pause();
}
EOF
cc -O2 -g -pthread -DNTHREADS=$nthreads -DDEPTH=$depth "$tmp/threads64.c" -o "$tmp/threads64"

"$tmp/threads64" >"$tmp/out" &
pid=$!
for _ in $(seq 100); do
	grep -q ready "$tmp/out" 2>/dev/null && break
	sleep 0.1
done
grep -q ready "$tmp/out" || { echo "the program did not get ready" >&2; exit 1; }
# Every thread inside a system call (not "running"), twice the same.
python3 - "$pid" <<'PY'
import os, sys, time
pid = sys.argv[1]
def state():
    d = f"/proc/{pid}/task"
    return {t: open(f"{d}/{t}/syscall").read() for t in os.listdir(d)}
prev = None
for _ in range(200):
    cur = state()
    if cur == prev and not any(v.startswith("running") for v in cur.values()):
        break
    prev = cur
    time.sleep(0.05)
else:
    sys.exit("threads never settled")
PY

# What is being unwound: threads and frames per thread, from backstep itself.
"$backstep" pid --json "$pid" | python3 -c '
import json, sys
t = [json.loads(l) for l in sys.stdin if l.strip()]
n = [len(x["frames"]) for x in t]
named = sum(1 for x in t for f in x["frames"] if f.get("function"))
errors = sum(1 for x in t if "error" in x)
print(f"process: {len(t)} threads, frames per thread min {min(n)} / mean {sum(n)/len(n):.1f} / max {max(n)}, "
      f"{sum(n)} frames, {named} named, {errors} walk errors")'
echo "$(nproc) CPUs, $(uname -r); wall time, best of $runs (median), in ms:"

best() { # best and median wall time of RUNS runs of "$@"
	python3 - "$runs" "$@" <<'PY'
import statistics, subprocess, sys, time
runs = int(sys.argv[1]); cmd = sys.argv[2:]
times = []
for _ in range(runs):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times.append(time.perf_counter() - t0)
    if p.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}")
shown = " ".join(a if " " not in a else repr(a) for a in cmd)
print(f"{min(times) * 1000:10.2f} {statistics.median(times) * 1000:10.2f}   {shown}")
PY
}
printf "%10s %10s   %s\n" best median command
# The symbol memo (bk_space_set_symbol_cache) in a fresh directory: the
# first run fills it, the others answer from it; --no-cache reads the
# symbol tables and DWARF every time.
export BACKSTEP_CACHE_DIR="$tmp/symbol-cache"
best "$backstep" pid "$pid"
best "$backstep" pid --no-cache "$pid"
best "$backstep" pid --json "$pid"
# -n: the walk alone (attach, walk, detach, print PCs): about how long the
# process is stopped in the runs above, which detach before reading symbols.
best "$backstep" pid -n "$pid"
# Without separate debug files (libc6-dbg): /usr/lib/debug hidden by an
# empty directory in a private mount namespace (root, util-linux unshare).
if [ -d /usr/lib/debug ] && command -v unshare >/dev/null; then
	mkdir "$tmp/nodebug"
	unshare -m sh -c 'mount --bind "$1" /usr/lib/debug && shift && "$@"' sh "$tmp/nodebug" \
		bash -c "$(declare -f best); runs=$runs; best \"\$@\"" best \
		"$backstep" pid --no-cache "$pid" 2>/dev/null | sed 's/$/   (no \/usr\/lib\/debug)/' ||
		echo "(unshare failed: no run without /usr/lib/debug)"
fi
# The same debug files (libc6-dbg's, for libc and ld.so), once as shipped
# (zlib-compressed) and once processed by dwz (what they share moved to a
# supplementary file under /usr/lib/debug/.dwz/, then compressed again),
# each mounted over /usr/lib/debug. Issue 10 asks for dwz'd files to cost
# at most 1.5x the plain ones.
if [ -d /usr/lib/debug ] && command -v unshare >/dev/null && command -v dwz >/dev/null; then
	mkdir -p "$tmp/plain" "$tmp/dwz/.dwz"
	ok=1
	files=()
	for lib in $(awk '$6 ~ /(libc\.so|ld-linux)/ {print $6}' "/proc/$pid/maps" | sort -u); do
		bid=$(readelf -n "$lib" | sed -n 's/.*Build ID: //p')
		src="/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug"
		[ -f "$src" ] || { ok=0; break; }
		for d in plain dwz; do mkdir -p "$tmp/$d/.build-id/${bid:0:2}"; done
		cp "$src" "$tmp/plain/.build-id/${bid:0:2}/"
		objcopy --decompress-debug-sections "$src" "$tmp/dwz/.build-id/${bid:0:2}/${bid:2}.debug"
		files+=("$tmp/dwz/.build-id/${bid:0:2}/${bid:2}.debug")
	done
	if [ "$ok" = 1 ] && [ ${#files[@]} -ge 2 ] &&
		dwz -m "$tmp/dwz/.dwz/common" -M /usr/lib/debug/.dwz/common "${files[@]}" 2>/dev/null; then
		for f in "${files[@]}" "$tmp/dwz/.dwz/common"; do
			objcopy --compress-debug-sections=zlib "$f" "$f.z" && mv "$f.z" "$f"
		done
		for d in plain dwz; do
			unshare -m sh -c 'mount --bind "$1" /usr/lib/debug && shift && "$@"' sh "$tmp/$d" \
				bash -c "$(declare -f best); runs=$runs; best \"\$@\"" best \
				"$backstep" pid --no-cache "$pid" 2>/dev/null | sed "s/\$/   ($d debug files)/"
		done
	else
		echo "(dwz could not process libc's debug files: no dwz rows)"
	fi
fi
best eu-stack -p "$pid"
best eu-stack -p "$pid" -q
best gdb -nx -batch -ex 'thread apply all bt' -p "$pid"
