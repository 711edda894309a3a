/* A JIT that tells profilers about its code in a jitdump, as V8 does with
 * --perf-prof --perf-prof-unwinding-info: it writes jit_code.h's functions
 * (J1 calls J2 calls J3 calls back into C, no frame pointers) into an
 * anonymous executable mapping, and DIR/jit-PID.dump with, for each, a
 * JIT_CODE_UNWINDING_INFO (its .eh_frame, placed after its code: where
 * perf and V8 put it), a JIT_CODE_DEBUG_INFO (made-up source lines of
 * "gen.js") and a JIT_CODE_LOAD ("js_J1" ...), timestamps from
 * CLOCK_MONOTONIC (perf record -k mono's clock); then maps the jitdump
 * with PROT_EXEC, which is how perf, and backstep, find it.
 *
 *   jitdump DIR block [nounwind]  park in pause() under J3 (prints ready)
 *   jitdump DIR busy SECONDS [relabel]
 *                                 spin in C under J3, calling in again and
 *                                 again, for SECONDS (a profile); relabel:
 *                                 half-way, J3 loaded again at its address
 *                                 as "js_J3_v2" (a JIT replacing code), the
 *                                 time of that printed on stderr
 *
 *   jitdump DIR calls N [lie]     call J1 N times, the callback returning at
 *                                 once, and exit (backstep validate); lie:
 *                                 J2's unwinding record says its frame is
 *                                 24 bytes where it is 32 (from its sub to
 *                                 its add), which a validator must catch
 *
 * nounwind: the unwinding records are left out (names and lines only).
 * Every record is written with write(2) as it is made: a reader sees the
 * whole file at any stop (V8 buffers it through stdio). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../unit/jit_code.h"
#include "live.h"

static int fd;
static uint64_t next_index;

static uint64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void out(const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w <= 0)
			live_die("write jitdump");
		b += w;
		n -= (size_t)w;
	}
}

struct prefix {
	uint32_t id, size;
	uint64_t time;
};

static void header(void)
{
	struct {
		uint32_t magic, version, size, machine, pad, pid;
		uint64_t time, flags;
	} h = { 0x4A695444, 1, 40, 62, 0, (uint32_t)getpid(), now(), 0 };
	out(&h, sizeof(h));
}

static void unwinding(const uint8_t *at, uint32_t len, const uint8_t *insns, size_t n)
{
	uint8_t sec[128];
	memset(sec, 0, sizeof(sec));
	memcpy(sec, cie, sizeof(cie));
	image_sec = sec;
	image_sec_addr = (uint64_t)(uintptr_t)at + ((len + 7) & ~7u);
	size_t off = put_fde(sec, sizeof(cie), false, (uint64_t)(uintptr_t)at, len, insns, n);
	image_sec = NULL;
	off += 4; /* the terminator */
	static const uint8_t hdr[20] = { 1, 0x1b, 3, 0x3b };
	uint64_t all = off + sizeof(hdr), padded = (all + 7) & ~(uint64_t)7;
	struct prefix p = { 4, (uint32_t)(16 + 24 + padded), now() };
	uint64_t f[3] = { all, sizeof(hdr), all };
	static const uint8_t zero[8];
	out(&p, sizeof(p));
	out(f, sizeof(f));
	out(sec, off);
	out(hdr, sizeof(hdr));
	out(zero, padded - all);
}

static void debug_info(const uint8_t *at, uint32_t first_line)
{
	static const char file[] = "gen.js";
	uint64_t n = 2;
	struct prefix p = { 2, (uint32_t)(16 + 16 + n * (16 + sizeof(file))), now() };
	uint64_t f[2] = { (uint64_t)(uintptr_t)at, n };
	out(&p, sizeof(p));
	out(f, sizeof(f));
	for (uint64_t i = 0; i < n; i++) {
		struct {
			uint64_t addr;
			uint32_t line, col;
		} e = { (uint64_t)(uintptr_t)at + 4 * i, first_line + (uint32_t)i, 3 };
		out(&e, sizeof(e));
		out(file, sizeof(file));
	}
}

static void load(const uint8_t *at, uint32_t len, const char *name)
{
	size_t nlen = strlen(name) + 1;
	struct prefix p = { 0, (uint32_t)(16 + 40 + nlen + len), now() };
	struct {
		uint32_t pid, tid;
		uint64_t vma, code_addr, code_size, code_index;
	} f = { (uint32_t)getpid(), (uint32_t)gettid(), (uint64_t)(uintptr_t)at,
		(uint64_t)(uintptr_t)at, len, ++next_index };
	out(&p, sizeof(p));
	out(&f, sizeof(f));
	out(name, nlen);
	out(at, len);
}

static const struct {
	int off, len, line;
	const uint8_t *insns;
	size_t n;
	const char *name;
} fns[] = {
	{ J1, J1_LEN, 10, cfa_j1, sizeof(cfa_j1), "js_J1" },
	{ J2, J2_LEN, 20, cfa_j2, sizeof(cfa_j2), "js_J2" },
	{ J3, J3_LEN, 30, cfa_j3, sizeof(cfa_j3), "js_J3" },
};
static bool unwinding_on;
static uint8_t *code_mem;
static uint8_t j2_frame = 32; /* J2's CFA offset from its sub to its add */

/* Function I's records, under NAME. */
static void describe(size_t i, const char *name)
{
	if (unwinding_on) {
		uint8_t insns[64];
		memcpy(insns, fns[i].insns, fns[i].n);
		if (fns[i].off == J2 && insns[0] == 0x44 && insns[1] == 0x0e)
			insns[2] = j2_frame; /* DW_CFA_advance_loc 4; DW_CFA_def_cfa_offset */
		unwinding(code_mem + fns[i].off, (uint32_t)fns[i].len, insns, fns[i].n);
	}
	debug_info(code_mem + fns[i].off, (uint32_t)fns[i].line);
	load(code_mem + fns[i].off, (uint32_t)fns[i].len, name);
}

static void load_j3(const char *name)
{
	describe(2, name);
}
static double busy_seconds;
static long calls;

NOINLINE static void js_callback(void)
{
	static int said;
	if (calls)
		return;
	if (!said++)
		live_ready();
	if (busy_seconds == 0) {
		for (;;)
			pause();
	}
	/* Busy: about 1 ms of work per call. */
	uint64_t t0 = now();
	volatile uint64_t x = 0;
	while (now() - t0 < 1000000)
		x += t0;
	KEEP();
}

static bool relabel;

NOINLINE static void enter(void (*j1)(void (*)(void)))
{
	if (calls) {
		for (long i = 0; i < calls; i++)
			j1(js_callback);
	} else if (busy_seconds == 0) {
		j1(js_callback);
	} else {
		uint64_t start = now(), end = start + (uint64_t)(busy_seconds * 1e9);
		bool relabelled = false;
		while (now() < end) {
			if (relabel && !relabelled && now() >= start + (end - start) / 2) {
				relabelled = true;
				uint64_t t = now();
				load_j3("js_J3_v2");
				fprintf(stderr, "relabelled %llu\n", (unsigned long long)t);
			}
			j1(js_callback);
		}
	}
	KEEP();
}

int main(int argc, char **argv)
{
	if (argc < 3)
		live_die("usage: jitdump DIR block [nounwind] | busy SECONDS [relabel] | "
			 "calls N [lie]");
	bool unwind = !(argc > 3 && strcmp(argv[3], "nounwind") == 0);
	bool lie = false;
	if (strcmp(argv[2], "calls") == 0) {
		calls = argc > 3 ? atol(argv[3]) : 1;
		if (calls < 1)
			calls = 1;
		lie = argc > 4 && strcmp(argv[4], "lie") == 0;
		unwind = true;
	}
	if (strcmp(argv[2], "busy") == 0) {
		busy_seconds = argc > 3 ? atof(argv[3]) : 1;
		relabel = argc > 4 && strcmp(argv[4], "relabel") == 0;
	}
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *mem = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	if (mem == MAP_FAILED)
		live_die("mmap code");
	write_code(mem); /* its calls are relative: written where it runs */

	char path[4096];
	snprintf(path, sizeof(path), "%s/jit-%d.dump", argv[1], (int)getpid());
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
	if (fd < 0)
		live_die("open jitdump");
	header();
	/* Mapped executable so that perf records the mapping (its MMAP record
	 * names the file); a reader of the process's map finds it so too. */
	if (mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED)
		live_die("mmap jitdump");
	code_mem = mem;
	unwinding_on = unwind;
	if (lie)
		j2_frame = 24;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		describe(i, fns[i].name);
	if (mprotect(mem, (size_t)page, PROT_READ | PROT_EXEC) != 0)
		live_die("mprotect");
	void (*j1)(void (*)(void));
	void *entry = mem + J1;
	memcpy(&j1, &entry, sizeof(j1));
	enter(j1);
	struct prefix close_rec = { 3, 16, now() };
	out(&close_rec, sizeof(close_rec));
	return 0;
}
