/* bk_backtrace and a ucontext cursor from a SIGPROF handler firing every
 * 200 µs of CPU time and sent every 50 µs by a pinger thread, thousands of
 * times, while the main thread and two
 * workers run varied code (recursion, qsort callbacks, libm, memcpy) and a
 * third thread dlopens and dlcloses a library in a loop. Every sample must
 * walk cleanly to main or to its thread's function or start, with no
 * allocation in the handler (malloc is interposed and counted per thread),
 * and nothing may crash. */
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#include "backstep.h"
#include "check.h"

static __thread int in_handler;
static atomic_int handler_allocs;
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
void *malloc(size_t n)
{
	if (in_handler)
		atomic_fetch_add(&handler_allocs, 1);
	return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
	if (in_handler)
		atomic_fetch_add(&handler_allocs, 1);
	return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
	if (in_handler)
		atomic_fetch_add(&handler_allocs, 1);
	return __libc_realloc(p, n);
}
void free(void *p)
{
	if (in_handler && p)
		atomic_fetch_add(&handler_allocs, 1);
	__libc_free(p);
}

struct range {
	uintptr_t lo, hi;
};
static struct range r_main, r_worker, r_loader, r_pinger;
/* The outermost PC of every thread but the first: the return address into
 * the libc function that started it (clone3's child side). A thread
 * interrupted before it reached its own function ends there too. */
static uint64_t thread_root_pc;
static atomic_int samples, bad_end, no_root, short_walks, errors, disagree;
/* Internal (src/unwind): bk_backtrace by the cursor alone, and how often
 * bk_backtrace's fast walk handed over to the cursor. */
int uw_backtrace_cursor(void **pcs, int max);
extern _Atomic unsigned long uw_fast_handovers;
static atomic_bool stop;

static struct range range_of(void *fn)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	struct range r = { 0, 0 };
	if (dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym) {
		r.lo = (uintptr_t)info.dli_saddr;
		r.hi = r.lo + sym->st_size;
	}
	return r;
}

static bool in(const struct range *r, uint64_t pc)
{
	return pc >= r->lo && pc < r->hi;
}

/* The first failing walks, kept for the report (filled in the handler
 * with plain stores, printed after the run). */
#define KEEP 4
#define KEEPF 48
static struct {
	int rc, n;
	uint64_t pc[KEEPF];
	int how[KEEPF];
} kept[KEEP];
static atomic_int nkept;

static void on_prof(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	in_handler = 1;
	struct bk_cursor c;
	int rc = bk_cursor_init_ucontext(&c, bk_space_local(), uc);
	bool root = false;
	int n = 0;
	uint64_t last = 0;
	uint64_t pcs_seen[KEEPF];
	int hows[KEEPF];
	if (rc == 0) {
		do {
			uint64_t pc = bk_cursor_lookup_pc(&c);
			root |= in(&r_main, pc) || in(&r_worker, pc) || in(&r_loader, pc) ||
				in(&r_pinger, pc);
			last = bk_cursor_pc(&c);
			if (n < KEEPF) {
				pcs_seen[n] = bk_cursor_pc(&c);
				hows[n] = bk_cursor_how(&c);
			}
			n++;
		} while ((rc = bk_cursor_step(&c)) == 1);
	}
	root |= thread_root_pc && last == thread_root_pc;
	if (rc != 0 || !root) {
		int k = atomic_fetch_add(&nkept, 1);
		if (k < KEEP) {
			kept[k].rc = rc;
			kept[k].n = n;
			for (int i = 0; i < n && i < KEEPF; i++) {
				kept[k].pc[i] = pcs_seen[i];
				kept[k].how[i] = hows[i];
			}
		}
	}
	/* The fast walk and the cursor's must give the same frames; only the
	 * first PC differs (two call sites in this handler). */
	void *pcs[128], *ref[128];
	int nb = bk_backtrace(pcs, 128), nr = uw_backtrace_cursor(ref, 128);
	if (nb < 2)
		atomic_fetch_add(&short_walks, 1);
	if (nb != nr || memcmp(pcs + 1, ref + 1, (size_t)(nb - 1) * sizeof(pcs[0])) != 0)
		atomic_fetch_add(&disagree, 1);
	atomic_fetch_add(&samples, 1);
	if (rc != 0)
		atomic_fetch_add(&bad_end, 1);
	if (!root)
		atomic_fetch_add(&no_root, 1);
	in_handler = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

__attribute__((noinline)) double churn(int depth)
{
	if (depth > 0)
		return churn(depth - 1) + 1.0;
	double v[64];
	for (int i = 0; i < 64; i++)
		v[i] = sin(i * 0.37) * cos(i * 1.1);
	qsort(v, 64, sizeof(v[0]), cmp_double);
	char a[256], b[256];
	memset(a, depth, sizeof(a));
	memcpy(b, a, sizeof(b));
	return v[10] + b[3];
}

void *worker(void *arg);
void *worker(void *arg)
{
	(void)arg;
	double s = 0;
	while (!atomic_load(&stop))
		s += churn((int)(s) % 40);
	return NULL;
}

static pthread_t targets[3];

void *find_root(void *arg);
void *find_root(void *arg)
{
	(void)arg;
	struct bk_cursor c;
	if (bk_cursor_init_local(&c, bk_space_local()) == 0) {
		uint64_t pc = bk_cursor_pc(&c);
		while (bk_cursor_step(&c) == 1)
			pc = bk_cursor_pc(&c);
		thread_root_pc = pc;
	}
	return NULL;
}

/* Sends SIGPROF to the busy threads every 50 µs of wall time: the CPU timer
 * alone fires only at the kernel tick. */
void *pinger(void *arg);
void *pinger(void *arg)
{
	(void)arg;
	struct timespec d = { 0, 50000 };
	for (unsigned i = 0; !atomic_load(&stop); i++) {
		pthread_kill(targets[i % 3], SIGPROF);
		nanosleep(&d, NULL);
	}
	return NULL;
}

void *loader(void *arg);
void *loader(void *arg)
{
	const char *path = arg;
	while (!atomic_load(&stop)) {
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			atomic_fetch_add(&errors, 1);
			break;
		}
		int (*f)(int) = (int (*)(int))dlsym(h, "fodder_work");
		if (f)
			f(1000);
		dlclose(h);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_sigprof LIBRARY\n");
		return 2;
	}
	r_main = range_of((void *)main);
	r_worker = range_of((void *)worker);
	r_loader = range_of((void *)loader);
	r_pinger = range_of((void *)pinger);
	CHECK(r_main.hi > r_main.lo && r_worker.hi > r_worker.lo, "function ranges known");

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);

	pthread_t w[2], l, p, f;
	pthread_create(&f, NULL, find_root, NULL);
	pthread_join(f, NULL);
	CHECK(thread_root_pc != 0, "a thread's outermost frame is known");
	pthread_create(&w[0], NULL, worker, NULL);
	pthread_create(&w[1], NULL, worker, NULL);
	pthread_create(&l, NULL, loader, argv[1]);
	targets[0] = pthread_self();
	targets[1] = w[0];
	targets[2] = l;
	pthread_create(&p, NULL, pinger, NULL);
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_PROF, &it, NULL);

	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	double s = 0;
	do {
		s += churn(25);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 4000 &&
		 atomic_load(&samples) < 20000);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	atomic_store(&stop, true);
	pthread_join(w[0], NULL);
	pthread_join(w[1], NULL);
	pthread_join(l, NULL);
	pthread_join(p, NULL);

	printf("%d samples (%g)\n", atomic_load(&samples), s > 0 ? 1.0 : 0.0);
	for (int k = 0; k < atomic_load(&nkept) && k < KEEP; k++) {
		printf("failed walk %d: %s after %d frames\n", k, bk_strerror(kept[k].rc), kept[k].n);
		for (int i = 0; i < kept[k].n && i < KEEPF; i++) {
			Dl_info info;
			const char *name = dladdr((void *)(uintptr_t)kept[k].pc[i], &info) && info.dli_sname
						   ? info.dli_sname : "?";
			printf("  #%d 0x%llx %s [%s]\n", i, (unsigned long long)kept[k].pc[i], name,
			       bk_how_name((enum bk_frame_how)kept[k].how[i]));
		}
	}
	CHECK(atomic_load(&samples) >= 1000, "thousands of samples: %d", atomic_load(&samples));
	CHECK_INT(atomic_load(&bad_end), 0, "every walk ends cleanly");
	CHECK_INT(atomic_load(&no_root), 0, "every walk reaches main or its thread function");
	CHECK_INT(atomic_load(&short_walks), 0, "bk_backtrace finds frames");
	CHECK_INT(atomic_load(&disagree), 0, "bk_backtrace's fast walk agrees with the cursor's");
	unsigned long handed = atomic_load(&uw_fast_handovers);
	printf("fast walk handed over to the cursor in %lu of %d samples\n", handed,
	       atomic_load(&samples));
	/* Handovers are the samples with a frame the fast walk cannot do: here
	 * the loader thread inside the library's _init/_fini (crti.o code
	 * without CFI), about 5% of samples. Most walks must be its own. */
	CHECK(handed * 2 < (unsigned long)atomic_load(&samples),
	      "the fast walk does most samples alone (%lu handed over)", handed);
	CHECK_INT(atomic_load(&handler_allocs), 0, "no allocation in the handler");
	CHECK_INT(atomic_load(&errors), 0, "dlopen worked");
	return check_summary();
}
