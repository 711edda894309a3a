/* bk_backtrace and a ucontext cursor from a SIGPROF handler firing every
 * 200 µs of CPU time and sent every 50 µs by a pinger thread, thousands of
 * times, while the main thread and two
 * workers run varied code (recursion, qsort callbacks, libm, memcpy) and a
 * third thread dlopens and dlcloses a library in a loop. Every sample must
 * walk cleanly to main or to its thread's function or start, and nothing
 * may crash.
 *
 * The async-signal-safety proof (README: "no malloc, no locks, no errno
 * changes"): while the handler walks, calls to malloc/calloc/realloc/free
 * and to pthread_mutex_lock/trylock/timedlock/clocklock and
 * pthread_rwlock_{rd,wr}lock and their try/timed/clock forms are counted
 * per thread (interposed below) and must be zero; errno is set to a
 * sentinel before each walk and must still hold it after. The
 * interposition catches what backstep's code calls (it is linked into this
 * executable, so its calls bind to these definitions; libbackstep.so's
 * would go through the PLT to them alike) and what other libraries call
 * through their PLT. Calls glibc makes to its own internal locks (the
 * loader's lock in dl_iterate_phdr or dlopen, malloc's arena locks) bind
 * inside libc and are not seen: that is accepted — what backstep calls in
 * glibc on the walk (_dl_find_object, reads of memory) is glibc's to keep
 * AS-safe.
 * The interposers are checked to see calls at all before the run. */
#include <dlfcn.h>
#include <errno.h>
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

/* ---- lock interposition: calls while the handler walks ---- */
enum {
	L_MUTEX_LOCK, L_MUTEX_TRYLOCK, L_MUTEX_TIMEDLOCK, L_MUTEX_CLOCKLOCK, L_RD, L_WR, L_TRYRD,
	L_TRYWR, L_TIMEDRD, L_TIMEDWR, L_CLOCKRD, L_CLOCKWR, NLOCKFN
};
static const char *const lock_fn_name[NLOCKFN] = {
	"pthread_mutex_lock",	      "pthread_mutex_trylock",	    "pthread_mutex_timedlock",
	"pthread_mutex_clocklock",    "pthread_rwlock_rdlock",	    "pthread_rwlock_wrlock",
	"pthread_rwlock_tryrdlock",   "pthread_rwlock_trywrlock",   "pthread_rwlock_timedrdlock",
	"pthread_rwlock_timedwrlock", "pthread_rwlock_clockrdlock", "pthread_rwlock_clockwrlock",
};
static atomic_int handler_locks[NLOCKFN];

static void count_lock(int which)
{
	if (in_handler)
		atomic_fetch_add(&handler_locks[which], 1);
}

/* The real functions: the next definitions, looked up before main (a
 * constructor) or at a first call before that, never in a handler. */
static void *next_fn(int which)
{
	static void *fn[NLOCKFN];
	if (!fn[which])
		fn[which] = dlsym(RTLD_NEXT, lock_fn_name[which]);
	return fn[which];
}

__attribute__((constructor)) static void resolve_lock_fns(void)
{
	for (int i = 0; i < NLOCKFN; i++)
		next_fn(i);
}

#define NEXT(which, type) ((type)next_fn(which))
typedef int (*mutex_fn)(pthread_mutex_t *);
typedef int (*mutex_timed_fn)(pthread_mutex_t *, const struct timespec *);
typedef int (*mutex_clock_fn)(pthread_mutex_t *, clockid_t, const struct timespec *);
typedef int (*rwlock_fn)(pthread_rwlock_t *);
typedef int (*rwlock_timed_fn)(pthread_rwlock_t *, const struct timespec *);
typedef int (*rwlock_clock_fn)(pthread_rwlock_t *, clockid_t, const struct timespec *);

int pthread_mutex_lock(pthread_mutex_t *m)
{
	count_lock(L_MUTEX_LOCK);
	return NEXT(L_MUTEX_LOCK, mutex_fn)(m);
}
int pthread_mutex_trylock(pthread_mutex_t *m)
{
	count_lock(L_MUTEX_TRYLOCK);
	return NEXT(L_MUTEX_TRYLOCK, mutex_fn)(m);
}
int pthread_mutex_timedlock(pthread_mutex_t *restrict m, const struct timespec *restrict t)
{
	count_lock(L_MUTEX_TIMEDLOCK);
	return NEXT(L_MUTEX_TIMEDLOCK, mutex_timed_fn)(m, t);
}
int pthread_mutex_clocklock(pthread_mutex_t *restrict m, clockid_t c,
			    const struct timespec *restrict t)
{
	count_lock(L_MUTEX_CLOCKLOCK);
	return NEXT(L_MUTEX_CLOCKLOCK, mutex_clock_fn)(m, c, t);
}
int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	count_lock(L_RD);
	return NEXT(L_RD, rwlock_fn)(l);
}
int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	count_lock(L_WR);
	return NEXT(L_WR, rwlock_fn)(l);
}
int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	count_lock(L_TRYRD);
	return NEXT(L_TRYRD, rwlock_fn)(l);
}
int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	count_lock(L_TRYWR);
	return NEXT(L_TRYWR, rwlock_fn)(l);
}
int pthread_rwlock_timedrdlock(pthread_rwlock_t *restrict l, const struct timespec *restrict t)
{
	count_lock(L_TIMEDRD);
	return NEXT(L_TIMEDRD, rwlock_timed_fn)(l, t);
}
int pthread_rwlock_timedwrlock(pthread_rwlock_t *restrict l, const struct timespec *restrict t)
{
	count_lock(L_TIMEDWR);
	return NEXT(L_TIMEDWR, rwlock_timed_fn)(l, t);
}
int pthread_rwlock_clockrdlock(pthread_rwlock_t *restrict l, clockid_t c,
			       const struct timespec *restrict t)
{
	count_lock(L_CLOCKRD);
	return NEXT(L_CLOCKRD, rwlock_clock_fn)(l, c, t);
}
int pthread_rwlock_clockwrlock(pthread_rwlock_t *restrict l, clockid_t c,
			       const struct timespec *restrict t)
{
	count_lock(L_CLOCKWR);
	return NEXT(L_CLOCKWR, rwlock_clock_fn)(l, c, t);
}

/* The interposers see calls at all: each function called once as if from
 * the handler (before any signal is set up), every counter must move. */
static void probe_interposers(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += 1;
	struct timespec tm;
	clock_gettime(CLOCK_MONOTONIC, &tm);
	tm.tv_sec += 1;
	in_handler = 1;
	void *volatile p = malloc(16); /* volatile: the pairs may not be elided */
	free(p);
	p = calloc(1, 16);
	p = realloc(p, 32);
	free(p);
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	pthread_mutex_trylock(&m);
	pthread_mutex_unlock(&m);
	pthread_mutex_timedlock(&m, &t);
	pthread_mutex_unlock(&m);
	pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &tm);
	pthread_mutex_unlock(&m);
	pthread_rwlock_rdlock(&l);
	pthread_rwlock_unlock(&l);
	pthread_rwlock_wrlock(&l);
	pthread_rwlock_unlock(&l);
	pthread_rwlock_tryrdlock(&l);
	pthread_rwlock_unlock(&l);
	pthread_rwlock_trywrlock(&l);
	pthread_rwlock_unlock(&l);
	pthread_rwlock_timedrdlock(&l, &t);
	pthread_rwlock_unlock(&l);
	pthread_rwlock_timedwrlock(&l, &t);
	pthread_rwlock_unlock(&l);
	pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &tm);
	pthread_rwlock_unlock(&l);
	pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &tm);
	pthread_rwlock_unlock(&l);
	in_handler = 0;
	CHECK_INT(atomic_exchange(&handler_allocs, 0), 5, "the malloc interposers count");
	for (int i = 0; i < NLOCKFN; i++)
		CHECK_INT(atomic_exchange(&handler_locks[i], 0), 1, lock_fn_name[i]);
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
/* Walks after which errno no longer held the sentinel set before them. */
static atomic_int errno_cursor, errno_backtrace;
#define ERRNO_SENTINEL 0x5eed
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
	int saved_errno = errno;
	in_handler = 1;
	errno = ERRNO_SENTINEL;
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
	if (errno != ERRNO_SENTINEL)
		atomic_fetch_add(&errno_cursor, 1);
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
	errno = ERRNO_SENTINEL;
	int nb = bk_backtrace(pcs, 128), nr = uw_backtrace_cursor(ref, 128);
	if (errno != ERRNO_SENTINEL)
		atomic_fetch_add(&errno_backtrace, 1);
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
	errno = saved_errno;
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
	probe_interposers();

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
	for (int i = 0; i < NLOCKFN; i++) {
		char what[96];
		snprintf(what, sizeof(what), "no %s in the handler's walks", lock_fn_name[i]);
		CHECK_INT(atomic_load(&handler_locks[i]), 0, what);
	}
	CHECK_INT(atomic_load(&errno_cursor), 0, "errno unchanged by the ucontext cursor's walk");
	CHECK_INT(atomic_load(&errno_backtrace), 0,
		  "errno unchanged by bk_backtrace and the cursor-only bk_backtrace");
	CHECK_INT(atomic_load(&errors), 0, "dlopen worked");
	return check_summary();
}
