/* backstep record [options] (-p PID | -- CMD [ARGS...]): samples taken
 * live with perf_event_open and unwound as they arrive; no perf.data is
 * written and no stack bytes reach the disk. Every record goes through
 * report's pipeline (samples.h) by way of a live reader
 * (src/profile/prof_live.c); the output module prints it (perf-script and
 * json as the samples come, folded, svg and speedscope at the end).
 *
 * The events. One cpu-clock event per (thread, CPU): pid = the thread,
 * cpu = each online CPU, inherit = 1, one ring buffer per CPU (the other
 * events of that CPU write into it: PERF_EVENT_IOC_SET_OUTPUT). The kernel
 * refuses to map the buffer of an inherited per-task event (cpu -1), which
 * is why the events are per CPU, as perf record's are. Inherit makes every
 * thread and child process the watched threads create later sample into
 * the same buffers, and their FORK, COMM, MMAP2 and EXIT records come along.
 *   -- CMD  fork; the child waits on a pipe; its events are opened
 *           disabled with enable_on_exec; then it execs, and the kernel
 *           writes the new image's COMM and MMAP2 records. An exec that
 *           fails is reported (exit 127, as a shell does).
 *   -p PID  an event per existing thread (/proc/PID/task, read once) and
 *           CPU, enabled at once; then the COMM and MMAP2 records of what
 *           already runs are synthesized from /proc (prof_live_synth), as
 *           perf does. Limits: a thread created while the events are being
 *           opened, by a thread whose events are not open yet, is missed;
 *           processes PID forked before are not followed.
 * The target is never stopped or traced (the CMD child only waits on its
 * pipe before exec).
 *
 * The loop: a reader thread ppolls the buffers (a wakeup every few
 * samples, 100 ms at most); a pass reads every buffer up to where it was
 * when the pass began, then adds a FINISHED_ROUND: the rule perf's
 * readers follow (prof_stack.c, "Time order"). It copies the records into
 * memory; the main thread feeds them to the pipeline in that order (see
 * "The reader thread" for why two threads). SIGINT, SIGTERM, -d SECONDS
 * or the end of the target stop it: the events are disabled, one last
 * pass is read, and the pipeline finishes. A CMD still running then gets
 * SIGTERM (SIGKILL a second later), as under perf record. CMD writes to
 * the same stdout as the profile unless -o sends the profile elsewhere.
 * Exit status: 0 (whatever CMD's; also after Ctrl-C, the usual end of a
 * recording), 1 (an error, one line), 2 (usage, or a -p process that does
 * not exist), 127 (CMD cannot be run), 143/129 after SIGTERM/SIGHUP (the
 * profile written first).
 *
 * Defaults: 999 Hz, not perf's 4000: every sample copies 8 KiB of user
 * stack, which at 4000 Hz is 32 MiB/s per busy CPU to copy and walk, and
 * 999 avoids beating with 1000 Hz timers in the target. Ring buffers of
 * 1 MiB per CPU (halved until the kernel's locked-memory limit allows).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "frames.h"
#include "out.h"
#include "samples.h"

#include "../src/base/base.h"

#define DEFAULT_HZ 999
#define RING_MAX (1u << 20)        /* bytes of data per CPU, at most */
#define RING_MIN (64u << 10)       /* and at least (7 samples) */
#define WAKEUP_SAMPLES 8           /* a wakeup every this many samples */
#define POLL_MS 100                /* at most this long between passes */

static const char usage[] =
	"backstep record [-F HZ] [-d SECONDS] [--format " FR_SAMPLE_FORMATS "] [-o FILE]\n"
	"                [--pid PID] [--tid TID] [--comm NAME] [--no-inline] [-n]\n"
	"                [--kernel|--no-kernel] [--no-debuginfod] (-p PID | -- CMD [ARGS...])\n"
	"  -p PID        sample process PID and the threads and children it creates\n"
	"  -- CMD        run CMD and sample it, its threads and children\n"
	"  -F HZ         samples per second of CPU time per thread (default 999)\n"
	"  -d SECONDS    stop after this long (else at Ctrl-C or when the target ends)\n"
	"  --pid, --tid, --comm  print only those samples (as report)";

struct cpu_ring {
	int cpu;
	int fd;                    /* the event whose buffer it is */
	struct prof_ring *ring;
};

struct rec {
	struct smp_opts o;
	uint64_t hz;
	double secs;               /* 0: until stopped */
	int attach;                /* -p */
	char **cmd;
	pid_t child;
	bool child_reaped;
	int *cpus;
	size_t ncpus;
	struct cpu_ring *rings;    /* per CPU, in cpus[] order */
	int *fds;
	size_t nfds, capfds;
	size_t ring_len;
	uint64_t ring_errors;
	struct prof_reader *r;
	struct smp *s;
};

static volatile sig_atomic_t stop_signal, child_changed;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void on_child(int sig)
{
	(void)sig;
	child_changed = 1;
}

static int perf_event_open(struct perf_event_attr *attr, int pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* An integer from a /proc or /sys file, or FALLBACK. */
static long read_long(const char *path, long fallback)
{
	FILE *f = fopen(path, "r");
	long v;
	if (!f)
		return fallback;
	if (fscanf(f, "%ld", &v) != 1)
		v = fallback;
	fclose(f);
	return v;
}

/* The process thread TID belongs to (/proc/TID/status Tgid), or TID. */
static int tgid_of(int tid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	FILE *f = fopen(path, "r");
	int tgid = tid;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	if (f)
		fclose(f);
	return tgid > 0 ? tgid : tid;
}

/* CPU C into rc->cpus. */
static bool add_cpu(struct rec *rc, size_t *cap, long c)
{
	int *cpus = base_grow(rc->cpus, cap, rc->ncpus + 1, sizeof(*cpus), 64);
	if (!cpus)
		return false;
	rc->cpus = cpus;
	rc->cpus[rc->ncpus++] = (int)c;
	return true;
}

/* The online CPUs (/sys/devices/system/cpu/online: "0-3,6,8-9"), else
 * every configured one. 0 or BK_E_NOMEM. */
static int online_cpus(struct rec *rc)
{
	char buf[4096] = "";
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	size_t cap = 0;
	for (char *p = buf; *p && *p != '\n';) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;
		if (end == p || lo < 0)
			break;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		for (long c = lo; c <= hi && c < 1 << 16; c++)
			if (!add_cpu(rc, &cap, c))
				return BK_E_NOMEM;
		p = *end == ',' ? end + 1 : end;
	}
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	if (rc->ncpus == 0) /* unreadable */
		for (long c = 0; c < (conf > 0 ? conf : 1); c++)
			if (!add_cpu(rc, &cap, c))
				return BK_E_NOMEM;
	return 0;
}

/* ---- Opening the events ------------------------------------------------------ */

/* Why perf_event_open refused (errno E) for ATTR, as one line. */
static void open_error(const struct rec *rc, const struct perf_event_attr *attr, int e)
{
	long paranoid = read_long("/proc/sys/kernel/perf_event_paranoid", -100);
	if (e == EACCES || e == EPERM) {
		/* perf_event_paranoid: 2 allows user-mode samples of one's own
		 * processes, 1 kernel-mode ones too (CAP_PERFMON overrides). */
		long need = attr->exclude_kernel ? 2 : 1;
		if (paranoid != -100 && paranoid > need)
			cli_error("record", "perf_event_paranoid is %ld: %s %ld or lower (or CAP_PERFMON)",
				  paranoid, attr->exclude_kernel ? "needs" : "kernel samples (--kernel) need",
				  need);
		else if (rc->attach)
			cli_error("record", "not permitted to sample process %d (another user's, or "
				  "set-uid: needs CAP_PERFMON or CAP_SYS_PTRACE)", rc->attach);
		else
			cli_error("record", "perf_event_open: %s (perf_event_paranoid is %ld)",
				  strerror(e), paranoid);
	} else if (e == ENOSYS || e == ENOENT || e == ENODEV || e == EOPNOTSUPP) {
		cli_error("record", "perf_event_open: %s (no software cpu-clock event in this kernel?)",
			  strerror(e));
	} else if (e == EMFILE || e == ENFILE) {
		cli_error("record", "perf_event_open: %s: an event per thread and CPU (%zu CPUs) needs "
			  "more open files (ulimit -n)", strerror(e), rc->ncpus);
	} else if (e == ESRCH) {
		cli_error("record", "process %d: no such process", rc->attach ? rc->attach : rc->child);
	} else {
		cli_error("record", "perf_event_open: %s", strerror(e));
	}
}

static void close_events(struct rec *rc)
{
	for (size_t i = 0; i < rc->ncpus && rc->rings; i++) {
		prof_ring_unmap(rc->rings[i].ring);
		rc->rings[i] = (struct cpu_ring){ rc->cpus[i], -1, NULL };
	}
	for (size_t i = 0; i < rc->nfds; i++)
		close(rc->fds[i]);
	rc->nfds = 0;
}

/* The events of thread TID on every CPU: 0, the errno perf_event_open
 * failed with, or -1 after a message. */
static int open_thread(struct rec *rc, struct perf_event_attr *attr, int tid)
{
	for (size_t c = 0; c < rc->ncpus; c++) {
		int fd = perf_event_open(attr, tid, rc->cpus[c]);
		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* the CPU went offline */
			return errno;
		}
		int *fds = base_grow(rc->fds, &rc->capfds, rc->nfds + 1, sizeof(*fds), 64);
		if (!fds) {
			close(fd);
			cli_error("record", "out of memory");
			return -1;
		}
		rc->fds = fds;
		rc->fds[rc->nfds++] = fd;
		struct cpu_ring *cr = &rc->rings[c];
		if (cr->ring) {
			if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, cr->fd) != 0) {
				cli_error("record", "cannot share CPU %d's buffer: %s", cr->cpu,
					  strerror(errno));
				return -1;
			}
			continue;
		}
		int err;
		while ((err = prof_ring_map(fd, rc->ring_len, &cr->ring)) == BK_E_LIMIT &&
		       rc->ring_len > RING_MIN)
			rc->ring_len /= 2;
		if (err) {
			cli_error("record", "cannot map CPU %d's buffer of %zu KiB: %s", cr->cpu,
				  rc->ring_len >> 10,
				  err == BK_E_LIMIT ? "locked memory limit (perf_event_mlock_kb, ulimit -l)"
						    : bk_strerror(err));
			return -1;
		}
		cr->fd = fd;
	}
	return 0;
}

/* The events of every thread in TIDS (the leader first). A thread that
 * ended meanwhile is skipped; the leader's end is "no such process". */
static int open_all(struct rec *rc, struct perf_event_attr *attr, const int *tids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int err = open_thread(rc, attr, tids[i]);
		if (err == ESRCH && i > 0)
			continue;
		if (err)
			return err;
	}
	return 0;
}

/* Open the events, falling back to user mode only where the kernel's
 * samples are not allowed (and --kernel was not asked for). 0, or 1 after
 * a message. */
static int open_events(struct rec *rc, struct perf_event_attr *attr, const int *tids, size_t n)
{
	rc->ring_len = RING_MAX;
	int err = open_all(rc, attr, tids, n);
	if ((err == EACCES || err == EPERM) && !attr->exclude_kernel &&
	    !(rc->o.kernel_given && rc->o.kernel)) {
		long paranoid = read_long("/proc/sys/kernel/perf_event_paranoid", -100);
		close_events(rc);
		bool cc = attr->sample_type & PERF_SAMPLE_CALLCHAIN;
		struct perf_event_attr user = *attr;
		prof_live_attr(&user, rc->hz, false, false);
		user.disabled = attr->disabled;
		user.enable_on_exec = attr->enable_on_exec;
		user.wakeup_events = attr->wakeup_events;
		int e2 = open_all(rc, &user, tids, n);
		if (e2 == 0) {
			*attr = user;
			fprintf(stderr, "backstep: warning: perf_event_paranoid is %ld: user-mode samples "
				"only%s (kernel samples need 1 or lower, or CAP_PERFMON)\n", paranoid,
				cc ? ", no kernel frames" : "");
			return 0;
		}
		err = e2; /* say why user mode too was refused */
		*attr = user;
	}
	if (err > 0)
		open_error(rc, attr, err);
	return err ? 1 : 0;
}

/* ---- The command --------------------------------------------------------------- */

/* Fork CMD, stopped before exec until go_child: *GO and *STATUS are the
 * pipe ends to release it and to learn whether exec failed. */
static int start_child(struct rec *rc, int *go, int *status)
{
	int gp[2], sp[2];
	if (pipe2(gp, O_CLOEXEC) != 0 || pipe2(sp, O_CLOEXEC) != 0) {
		cli_error("record", "pipe: %s", strerror(errno));
		return 1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		cli_error("record", "fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		close(gp[1]);
		close(sp[0]);
		char c;
		ssize_t k;
		while ((k = read(gp[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (k != 1)
			_exit(127); /* backstep gave up: never run CMD unwatched */
		execvp(rc->cmd[0], rc->cmd);
		int e = errno;
		(void)!write(sp[1], &e, sizeof(e));
		_exit(127);
	}
	close(gp[0]);
	close(sp[1]);
	rc->child = pid;
	*go = gp[1];
	*status = sp[0];
	return 0;
}

/* Let the child exec: 0, or the errno its exec failed with. */
static int go_child(int go, int status)
{
	char c = 1;
	(void)!write(go, &c, 1);
	close(go);
	int e = 0;
	ssize_t k;
	while ((k = read(status, &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(status);
	return k == (ssize_t)sizeof(e) ? e : 0;
}

static bool reap(struct rec *rc, int flags)
{
	if (rc->child_reaped)
		return true;
	int st;
	pid_t w;
	while ((w = waitpid(rc->child, &st, flags)) < 0 && errno == EINTR)
		;
	if (w == rc->child || (w < 0 && errno == ECHILD))
		rc->child_reaped = true;
	return rc->child_reaped;
}

/* A child still running at the end: SIGTERM, SIGKILL a second later. */
static void end_child(struct rec *rc)
{
	if (!rc->child || reap(rc, WNOHANG))
		return;
	kill(rc->child, SIGTERM);
	for (int i = 0; i < 100; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		if (reap(rc, WNOHANG))
			return;
	}
	kill(rc->child, SIGKILL);
	reap(rc, 0);
}

static bool target_gone(struct rec *rc)
{
	if (rc->child)
		return reap(rc, WNOHANG);
	return cli_process_gone(rc->attach);
}

/* ---- Reading ------------------------------------------------------------------- */

static int feed(void *ctx, const struct prof_record *rec)
{
	struct rec *rc = ctx;
	return smp_feed(rc->s, rc->r, rec);
}

/* ---- The reader thread ------------------------------------------------------------
 *
 * Naming a frame the first time costs far more than reading a sample
 * (every new process opens and symbolizes its modules), so the buffers
 * are not read by the thread that walks: the reader thread copies every
 * record out of the ring buffers into chunks of memory as soon as they
 * are there, a FINISHED_ROUND after each pass over all buffers, and the
 * main thread feeds them to the pipeline in that order. Bursts of slow
 * naming then cost memory, not lost samples; past QUEUE_MAX queued bytes
 * the reader stops reading, the kernel counts what it drops (LOST) and
 * the summary says so. */

#define CHUNK_LEN (1u << 20)
#define QUEUE_MAX (256u << 20)

struct chunk {
	struct chunk *next;
	size_t used;
	uint8_t data[CHUNK_LEN];
};

struct relay {
	pthread_mutex_t lock;
	struct chunk *head, *tail; /* queued for the main thread */
	size_t bytes;
	bool nomem;
	int data_fd;               /* eventfd: the reader says "more" */
	int stop_fd;               /* eventfd: main says "a last pass, then end" */
	uint64_t ring_errors;
};

/* LEN bytes of one record at P onto the list *HEAD..*TAIL. */
static bool append(struct chunk **head, struct chunk **tail, const uint8_t *p, size_t len)
{
	struct chunk *c = *tail;
	if (!c || CHUNK_LEN - c->used < len) {
		if (!(c = malloc(sizeof(*c))))
			return false;
		c->next = NULL;
		c->used = 0;
		if (*tail)
			(*tail)->next = c;
		else
			*head = c;
		*tail = c;
	}
	memcpy(c->data + c->used, p, len);
	c->used += len;
	return true;
}

static const uint8_t finished_round[8] = { PROF_RECORD_FINISHED_ROUND, 0, 0, 0, 0, 0, 8, 0 };

/* One pass over every buffer and its FINISHED_ROUND, onto the queue. */
static void read_pass(struct rec *rc, struct relay *q)
{
	struct chunk *head = NULL, *tail = NULL;
	size_t bytes = 0;
	bool ok = true;
	for (size_t c = 0; c < rc->ncpus && ok; c++) {
		struct prof_ring *g = rc->rings[c].ring;
		if (!g)
			continue;
		prof_ring_pass(g);
		const uint8_t *p;
		size_t len;
		int k;
		while (ok && (k = prof_ring_next(g, &p, &len)) != 0) {
			if (k < 0) {
				q->ring_errors++; /* only this thread writes it before the join */
				break;
			}
			ok = append(&head, &tail, p, len);
			bytes += len;
		}
	}
	ok = ok && append(&head, &tail, finished_round, sizeof(finished_round));
	pthread_mutex_lock(&q->lock);
	if (head) {
		if (q->tail)
			q->tail->next = head;
		else
			q->head = head;
		q->tail = tail;
	}
	q->bytes += bytes;
	q->nomem |= !ok;
	pthread_mutex_unlock(&q->lock);
	uint64_t one = 1;
	(void)!write(q->data_fd, &one, sizeof(one));
}

struct reader_arg {
	struct rec *rc;
	struct relay *q;
};

static void *reader(void *arg)
{
	struct rec *rc = ((struct reader_arg *)arg)->rc;
	struct relay *q = ((struct reader_arg *)arg)->q;
	struct pollfd *pfd = calloc(rc->ncpus + 1, sizeof(*pfd));
	size_t n = 0;
	if (pfd) {
		pfd[n++] = (struct pollfd){ .fd = q->stop_fd, .events = POLLIN };
		for (size_t c = 0; c < rc->ncpus; c++)
			if (rc->rings[c].ring)
				pfd[n++] = (struct pollfd){ .fd = rc->rings[c].fd, .events = POLLIN };
	}
	for (bool last = false;;) {
		pthread_mutex_lock(&q->lock);
		bool room = q->bytes < QUEUE_MAX && !q->nomem;
		pthread_mutex_unlock(&q->lock);
		if (room || last)
			read_pass(rc, q);
		if (last)
			break;
		struct timespec ts = { 0, POLL_MS * 1000000L };
		/* Every signal is blocked here: the main thread takes them. */
		if (ppoll(pfd, pfd ? n : 0, &ts, NULL) > 0) {
			if (pfd[0].revents & POLLIN)
				last = true;
			/* A buffer whose events all ended says so for good: stop
			 * polling it (it is still read at every pass). */
			for (size_t i = 1; i < n; i++)
				if (pfd[i].revents & (POLLHUP | POLLERR | POLLNVAL))
					pfd[i].fd = -1;
		} else if (!pfd) {
			uint64_t v;
			last = read(q->stop_fd, &v, sizeof(v)) == (ssize_t)sizeof(v);
		}
	}
	free(pfd);
	return NULL;
}

/* The records queued so far, decoded and fed in order. 0 or BK_E_*. */
static int feed_queued(struct rec *rc, struct relay *q)
{
	uint64_t v;
	(void)!read(q->data_fd, &v, sizeof(v));
	pthread_mutex_lock(&q->lock);
	struct chunk *c = q->head;
	q->head = q->tail = NULL;
	bool nomem = q->nomem;
	pthread_mutex_unlock(&q->lock);
	int err = 0;
	while (c) {
		size_t bytes = 0;
		for (size_t off = 0; off + 8 <= c->used && !err;) {
			size_t len = (size_t)base_rd_le(c->data + off + 6, 2);
			if (len < 8)
				break; /* cannot be: the ring hands out no such record */
			struct prof_record rec;
			err = prof_decode_live(rc->r, c->data + off, len, &rec);
			if (err == 1)
				err = feed(rc, &rec);
			if (!(len == 8 && c->data[off] == PROF_RECORD_FINISHED_ROUND))
				bytes += len;
			off += len;
		}
		struct chunk *next = c->next;
		free(c);
		c = next;
		pthread_mutex_lock(&q->lock);
		q->bytes -= bytes < q->bytes ? bytes : q->bytes;
		pthread_mutex_unlock(&q->lock);
	}
	return err < 0 ? err : nomem ? BK_E_NOMEM : 0;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Read until stopped; then disable, read what is left. 0 or BK_E_*. */
static int loop(struct rec *rc, const sigset_t *wait_mask)
{
	struct relay q = { .data_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
			   .stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	struct reader_arg arg = { rc, &q };
	pthread_t thread;
	int err = 0;
	if (q.data_fd < 0 || q.stop_fd < 0 || pthread_mutex_init(&q.lock, NULL) != 0) {
		cli_error("record", "cannot set up the reader thread: %s", strerror(errno));
		err = BK_E_IO;
		goto close;
	}
	/* The thread starts with this thread's signal mask: all ours blocked. */
	if ((errno = pthread_create(&thread, NULL, reader, &arg)) != 0) {
		cli_error("record", "cannot start the reader thread: %s", strerror(errno));
		pthread_mutex_destroy(&q.lock);
		err = BK_E_IO;
		goto close;
	}
	struct pollfd pfd = { .fd = q.data_fd, .events = POLLIN };
	double deadline = rc->secs > 0 ? now() + rc->secs : 0, next_check = 0;
	for (;;) {
		if ((err = feed_queued(rc, &q)))
			break;
		double t = now();
		if (stop_signal || (deadline && t >= deadline))
			break;
		/* Whether the target is gone: at a SIGCHLD, else every 50 ms. */
		if (child_changed || t >= next_check) {
			child_changed = 0;
			next_check = t + 0.05;
			if (target_gone(rc))
				break;
		}
		double left = deadline ? deadline - now() : POLL_MS / 1e3;
		if (left > POLL_MS / 1e3)
			left = POLL_MS / 1e3;
		if (left < 0)
			left = 0;
		struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
		ppoll(&pfd, 1, &ts, wait_mask); /* data, a signal, or the time */
	}
	/* Nothing more: what the buffers hold now is the rest. */
	for (size_t i = 0; i < rc->nfds; i++)
		ioctl(rc->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	uint64_t one = 1;
	(void)!write(q.stop_fd, &one, sizeof(one));
	pthread_join(thread, NULL);
	int end_err = feed_queued(rc, &q);
	if (!err)
		err = end_err;
	rc->ring_errors = q.ring_errors;
	pthread_mutex_destroy(&q.lock);
close:
	for (struct chunk *c = q.head, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	if (q.data_fd >= 0)
		close(q.data_fd);
	if (q.stop_fd >= 0)
		close(q.stop_fd);
	return err;
}

/* ---- The command line ------------------------------------------------------------ */

static int parse(int argc, char **argv, struct rec *rc, const char **output)
{
	static const struct option longopts[] = {
		SMP_LONG_OPTIONS,
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;
	optind = 1;
	/* "+": options end at CMD, whose own options are its own */
	while ((ch = getopt_long(argc, argv, "+F:d:f:o:p:c:nh", longopts, NULL)) != -1) {
		int taken = smp_option(ch, optarg, &rc->o, output);
		if (taken < 0)
			return 2;
		if (taken)
			continue;
		uint64_t v;
		char *end;
		switch (ch) {
		case 'F': {
			long max = read_long("/proc/sys/kernel/perf_event_max_sample_rate", 0);
			if (!cli_parse_u64(optarg, &v) || v == 0 || v > 1000000) {
				cli_error("-F", "'%s' is not a frequency in Hz", optarg);
				return 2;
			}
			if (max > 0 && v > (uint64_t)max) {
				cli_error("-F", "%llu Hz is above perf_event_max_sample_rate (%ld)",
					  (unsigned long long)v, max);
				return 2;
			}
			rc->hz = v;
			break;
		}
		case 'd':
			errno = 0;
			rc->secs = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(rc->secs > 0) || rc->secs > 1e7) {
				cli_error("-d", "'%s' is not a duration in seconds", optarg);
				return 2;
			}
			break;
		case 'p':
			if (!cli_parse_u64(optarg, &v) || v == 0 || v > 0x7fffffff) {
				cli_error("-p", "'%s' is not a process id", optarg);
				return 2;
			}
			rc->attach = (int)v;
			break;
		case 'h':
			printf("usage: %s\n", usage);
			return 0;
		default:
			fprintf(stderr, "usage: %s\n", usage);
			return 2;
		}
	}
	if (optind < argc)
		rc->cmd = argv + optind;
	if (!rc->attach == !rc->cmd) {
		cli_error("record", "%s (usage: backstep record [options] (-p PID | -- CMD [ARGS...]))",
			  rc->attach ? "-p PID and a command: one or the other" : "no process: -p PID or -- CMD");
		return 2;
	}
	return -1;
}

int cmd_record(int argc, char **argv)
{
	struct rec rc = { .o = { .pr = &fr_perf_script, .kernel = true }, .hz = DEFAULT_HZ };
	const char *output = NULL;
	int status = parse(argc, argv, &rc, &output);
	if (status >= 0)
		return status;
	status = 1;

	int out_fd = -1, go = -1, st = -1, *tids = NULL, err;
	size_t ntids = 0;
	if (output && (out_fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		cli_error(output, "cannot write it: %s", strerror(errno));
		return CLI_USAGE;
	}
	if ((err = online_cpus(&rc)) || !(rc.rings = calloc(rc.ncpus, sizeof(*rc.rings)))) {
		cli_error("record", "out of memory");
		goto out;
	}
	for (size_t c = 0; c < rc.ncpus; c++)
		rc.rings[c] = (struct cpu_ring){ rc.cpus[c], -1, NULL };
	if (rc.attach) {
		rc.attach = tgid_of(rc.attach); /* -p of a thread: its process */
		if ((err = prof_live_threads(rc.attach, &tids, &ntids))) {
			cli_error("-p", err == BK_E_NOT_FOUND ? "%d: no such process" : "%d: %s",
				  rc.attach, bk_strerror(err));
			if (err == BK_E_NOT_FOUND)
				status = CLI_USAGE; /* unusable input */
			goto out;
		}
		/* An event per thread and CPU: as many files as the limit allows. */
		struct rlimit rl;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	} else if (start_child(&rc, &go, &st)) {
		goto out;
	}
	/* The child keeps our stdout; the profile goes to -o from here on. */
	if (out_fd >= 0 && dup2(out_fd, 1) < 0) {
		cli_error(output, "cannot write it: %s", strerror(errno));
		goto out;
	}

	/* From here on the signals that end the recording are taken only
	 * while we wait (ppoll), never in the middle of a pass. */
	sigset_t block, wait_mask;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &wait_mask);
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGTERM);
	sigdelset(&wait_mask, SIGHUP);
	sigdelset(&wait_mask, SIGCHLD);
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);

	struct perf_event_attr attr;
	if ((err = prof_live_attr(&attr, rc.hz, true, rc.o.kernel))) {
		cli_error("record", "%s", err == BK_E_UNSUPPORTED
					    ? "this machine's registers are not known (x86-64 and AArch64 are)"
					    : bk_strerror(err));
		goto out;
	}
	attr.wakeup_events = WAKEUP_SAMPLES;
	if (rc.child) {
		attr.disabled = 1;
		attr.enable_on_exec = 1;
		int pid = rc.child;
		if (open_events(&rc, &attr, &pid, 1))
			goto out;
	} else if (open_events(&rc, &attr, tids, ntids)) {
		goto out;
	}

	if ((err = prof_open_live(&attr, sizeof(attr), NULL, 0, &rc.r)) ||
	    (err = smp_new(prof_arch(rc.r), &rc.o, smp_kernel_callchains(rc.r), &rc.s))) {
		cli_error("record", "%s", bk_strerror(err));
		goto out;
	}
	prof_set_name(rc.r, 0, attr.exclude_kernel ? "cpu-clock:u" : "cpu-clock",
		      attr.exclude_kernel ? 11 : 9);
	if (rc.attach && (err = prof_live_synth(rc.r, rc.attach, feed, &rc))) {
		if (err == BK_E_NOT_FOUND)
			cli_error("-p", "%d: no such process (it ended)", rc.attach);
		else
			cli_error("record", "process %d: %s", rc.attach, bk_strerror(err));
		goto out;
	}
	if (rc.child) {
		int e = go_child(go, st);
		go = st = -1;
		if (e) {
			cli_error(rc.cmd[0], "cannot run: %s", strerror(e));
			status = 127;
			goto out;
		}
	}

	err = loop(&rc, &wait_mask);
	end_child(&rc);
	int end_err = smp_finish(rc.s, rc.r);
	if (!err)
		err = end_err;
	if (err)
		cli_error("record", "%s", bk_strerror(err));
	if (rc.ring_errors)
		fprintf(stderr, "backstep: warning: %llu passes over a ring buffer dropped (a record "
			"header that cannot be)\n", (unsigned long long)rc.ring_errors);
	smp_summary(rc.s, stderr, "backstep record");
	/* Ctrl-C is how a recording ends (as perf record's): 0. SIGTERM and
	 * SIGHUP end it too, the profile written, but say so: 128 + N. */
	status = err ? 1 : stop_signal == SIGTERM || stop_signal == SIGHUP ? 128 + stop_signal : 0;
out:
	if (go >= 0)
		close(go); /* the child, never released, exits 127 unrun */
	if (st >= 0)
		close(st);
	close_events(&rc);
	if (rc.child)
		reap(&rc, 0);
	if (out_fd >= 0)
		close(out_fd);
	smp_free(rc.s);
	prof_close(rc.r);
	base_free(tids);
	free(rc.fds);
	free(rc.rings);
	free(rc.cpus);
	return status;
}
