/* The in-process driver, the validator's side: the program single-steps
 * itself (inproc_preload.c, preloaded into it with LD_PRELOAD, runs the
 * one checker of val_run.c inside the program on every SIGTRAP of the
 * trap flag), and this file starts it, says what to check through its
 * environment, collects the results it sends over a pipe and makes them
 * the run's val_result, as val_run's own loop would have.
 *
 * Where it applies: an x86-64 program linked dynamically (LD_PRELOAD is
 * the dynamic loader's), with the checked code outside the libraries the
 * checker itself runs on (libc, the dynamic loader, libelf, libdwarf, the
 * compression libraries, Capstone: their code would be stepped while the
 * checker calls it), and not --step-all (which steps libc). Elsewhere
 * BK_E_UNSUPPORTED and a note, before anything ran: val_run then uses the
 * ptrace driver. Once started, a program stays in-process: its signal
 * handlers are stepped into, SIGTRAP's too (its own traps are told from
 * the driver's).
 *
 * The pipe carries messages (a u32 length, a type byte, a payload): 'R' a
 * snapshot of the result of one image (about once a second, and the last
 * one at exit or before an exec), 'E' the
 * exec's errno when the program could not be run. A snapshot is the
 * val_stats and val_mismatch structures as bytes (both ends are the same
 * build) and the strings after them. Images (exec) are numbered by the
 * program's side; each image's last snapshot counts, and they are added
 * up. The encoder is here too, so that both ends share one definition.
 *
 * Trusts val_run for the options; trusts nothing it reads from the pipe
 * beyond its own framing (every length is checked).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <elf.h>

#include "val.h"

/* ---- The wire format ----------------------------------------------------- */

struct wbuf {
	uint8_t *p;
	size_t n, cap;
	bool bad;
};

static void w_bytes(struct wbuf *w, const void *src, size_t len)
{
	if (w->bad)
		return;
	if (w->n + len > w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 4096;
		while (ncap < w->n + len)
			ncap *= 2;
		void *q = base_realloc(w->p, ncap);
		if (!q) {
			w->bad = true;
			return;
		}
		w->p = q;
		w->cap = ncap;
	}
	memcpy(w->p + w->n, src, len);
	w->n += len;
}

static void w_u32(struct wbuf *w, uint32_t v)
{
	w_bytes(w, &v, sizeof(v));
}

static void w_str(struct wbuf *w, const char *s)
{
	uint32_t len = s ? (uint32_t)strlen(s) : UINT32_MAX;
	w_u32(w, len);
	if (s)
		w_bytes(w, s, len);
}

/* Frame the message in W (its first 5 bytes reserved). */
static void w_close(struct wbuf *w, uint8_t type)
{
	if (w->bad || w->n < 5)
		return;
	uint32_t len = (uint32_t)(w->n - 4);
	memcpy(w->p, &len, 4);
	w->p[4] = type;
}

static int w_send(int fd, struct wbuf *w)
{
	int err = w->bad ? BK_E_NOMEM : 0;
	for (size_t at = 0; !err && at < w->n;) {
		ssize_t k = write(fd, w->p + at, w->n - at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			err = BK_E_IO;
		else
			at += (size_t)k;
	}
	base_free(w->p);
	*w = (struct wbuf){ 0 };
	return err;
}

int val_inproc_send_result(int fd, const struct val_result *res, uint32_t image, bool final)
{
	struct wbuf w = { 0 };
	uint8_t head[5] = { 0 };
	w_bytes(&w, head, sizeof(head));
	w_u32(&w, image);
	uint8_t flags = (uint8_t)(final | res->started << 1);
	w_bytes(&w, &flags, 1);
	w_str(&w, res->error);
	w_bytes(&w, &res->stats, sizeof(res->stats));
	w_u32(&w, (uint32_t)res->nmm);
	for (size_t i = 0; i < res->nmm; i++) {
		const struct val_mismatch *m = &res->mm[i];
		w_bytes(&w, m, sizeof(*m));
		w_str(&w, m->module);
		w_str(&w, m->function);
		w_str(&w, m->culprit_insn);
		w_str(&w, m->row);
		w_str(&w, m->insn_module);
		w_str(&w, m->insn_function);
		w_str(&w, m->insn_text);
	}
	w_close(&w, 'R');
	return w_send(fd, &w);
}

int val_inproc_send_text(int fd, uint8_t type, const char *text)
{
	struct wbuf w = { 0 };
	uint8_t head[5] = { 0 };
	w_bytes(&w, head, sizeof(head));
	w_str(&w, text);
	w_close(&w, type);
	return w_send(fd, &w);
}

struct rbuf {
	const uint8_t *p, *end;
	bool bad;
};

static void r_bytes(struct rbuf *r, void *dst, size_t len)
{
	if (r->bad || (size_t)(r->end - r->p) < len) {
		r->bad = true;
		memset(dst, 0, len);
		return;
	}
	memcpy(dst, r->p, len);
	r->p += len;
}

static uint32_t r_u32(struct rbuf *r)
{
	uint32_t v;
	r_bytes(r, &v, sizeof(v));
	return v;
}

static char *r_str(struct rbuf *r)
{
	uint32_t len = r_u32(r);
	if (r->bad || len == UINT32_MAX)
		return NULL;
	if ((size_t)(r->end - r->p) < len) {
		r->bad = true;
		return NULL;
	}
	char *s = base_alloc((size_t)len + 1);
	if (!s) {
		r->bad = true;
		return NULL;
	}
	memcpy(s, r->p, len);
	s[len] = 0;
	r->p += len;
	return s;
}

/* One image's last snapshot. */
struct image {
	uint32_t seq;
	bool final;
	struct val_result res;
};

/* Decode an 'R' payload into IM (its old content freed). */
static bool decode_result(const uint8_t *p, size_t len, struct image *im)
{
	struct rbuf r = { p, p + len, false };
	struct val_result res = { 0 };
	im->seq = r_u32(&r);
	uint8_t flags = 0;
	r_bytes(&r, &flags, 1);
	res.started = flags & 2;
	res.error = r_str(&r);
	r_bytes(&r, &res.stats, sizeof(res.stats));
	uint32_t nmm = r_u32(&r);
	if (!r.bad && nmm > (size_t)(r.end - r.p) / sizeof(struct val_mismatch))
		r.bad = true;
	if (!r.bad && nmm) {
		res.mm = base_calloc(nmm, sizeof(*res.mm));
		if (!res.mm)
			r.bad = true;
	}
	for (uint32_t i = 0; !r.bad && i < nmm; i++) {
		struct val_mismatch *m = &res.mm[res.nmm];
		r_bytes(&r, m, sizeof(*m));
		m->module = m->function = m->culprit_insn = m->row = NULL;
		m->insn_module = m->insn_function = m->insn_text = NULL;
		res.nmm++;
		m->module = r_str(&r);
		m->function = r_str(&r);
		m->culprit_insn = r_str(&r);
		m->row = r_str(&r);
		m->insn_module = r_str(&r);
		m->insn_function = r_str(&r);
		m->insn_text = r_str(&r);
	}
	if (r.bad || r.p != r.end) {
		val_result_free(&res);
		return false;
	}
	val_result_free(&im->res);
	im->res = res;
	im->final = flags & 1;
	return true;
}

/* ---- Where it applies ---------------------------------------------------- */

/* Libraries the checker runs on inside the program: checking their code
 * would step it while the checker calls it. */
static const char *const own_libs[] = {
	"libc.so", "ld-linux", "libm.so", "libelf", "libdwarf", "libz.so", "libzstd", "liblzma",
	"libdeflate", "libcapstone", "libbackstep", "libdl.so", "libpthread.so",
};

/* The program ARGV0 names, searched in PATH as execvp does. */
static bool find_program(const char *argv0, char *out, size_t outlen)
{
	if (strchr(argv0, '/')) {
		snprintf(out, outlen, "%s", argv0);
		return access(out, X_OK) == 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		snprintf(out, outlen, "%.*s%s%s", (int)n, n ? path : ".", "/", argv0);
		struct stat st;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return true;
		path += n + (end != NULL);
	}
	return false;
}

/* Why the ELF file PATH cannot take the preload library, or NULL. A file
 * that is not ELF (a script) is run by its interpreter: it applies. */
static const char *elf_problem(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL; /* execvp reports it */
	Elf64_Ehdr eh;
	const char *why = NULL;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		close(fd);
		return NULL;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		why = "not an x86-64 program";
	} else {
		bool interp = false;
		for (unsigned i = 0; i < eh.e_phnum && i < 256; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
			    (ssize_t)sizeof(ph))
				break;
			interp |= ph.p_type == PT_INTERP;
		}
		if (!interp)
			why = "a static program (no dynamic loader to preload the checker)";
	}
	/* A sanitizer's runtime wants to be the first library and wraps the
	 * program's mmap calls (its own allocator's too, which would look
	 * like new code at every stop). */
	struct stat st;
	if (!why && fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < (1ull << 31)) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			static const char *const rts[] = { "__asan_init", "__tsan_init", "__msan_init",
							   "__hwasan_init" };
			for (size_t i = 0; i < sizeof(rts) / sizeof(*rts) && !why; i++)
				if (memmem(m, (size_t)st.st_size, rts[i], strlen(rts[i]) + 1))
					why = "built with a sanitizer (its runtime must come first)";
			munmap(m, (size_t)st.st_size);
		}
	}
	close(fd);
	return why;
}

/* The preload library: $BACKSTEP_INPROC_LIB, else beside this build's
 * library (the build tree when the CLI runs from it, else the installed
 * one). */
static bool find_library(char *out, size_t outlen)
{
	const char *env = getenv("BACKSTEP_INPROC_LIB");
	if (env && env[0]) {
		snprintf(out, outlen, "%s", env);
		return access(out, R_OK) == 0;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	const char *build = BK_INPROC_BUILD_DIR;
	size_t blen = strlen(build);
	if (!strncmp(self, build, blen) && self[blen] == '/') {
		snprintf(out, outlen, "%s/%s", build, BK_INPROC_NAME);
		if (access(out, R_OK) == 0)
			return true;
	}
	snprintf(out, outlen, "%s/%s", BK_INPROC_INSTALL_DIR, BK_INPROC_NAME);
	return access(out, R_OK) == 0;
}

static bool applies(char *const *argv, const struct val_opts *o, char *note, size_t notelen,
		    char *lib, size_t liblen)
{
	if (o->step_all) {
		snprintf(note, notelen, "--step-all single-steps libc, which the in-process "
			 "checker runs on");
		return false;
	}
	for (size_t i = 0; i < o->nonly; i++)
		for (size_t k = 0; k < sizeof(own_libs) / sizeof(*own_libs); k++)
			if (strstr(o->only[i], own_libs[k])) {
				snprintf(note, notelen, "--only %s: the in-process checker runs on that "
					 "library itself", o->only[i]);
				return false;
			}
	char path[PATH_MAX];
	if (find_program(argv[0], path, sizeof(path))) {
		const char *why = elf_problem(path);
		if (why) {
			snprintf(note, notelen, "%.200s is %s", argv[0], why);
			return false;
		}
	}
	if (!find_library(lib, liblen)) {
		snprintf(note, notelen, "the in-process driver's library %.300s is not there", lib);
		return false;
	}
	return true;
}

/* ---- Running it ---------------------------------------------------------- */

static int spawn(char *const *argv, const struct val_opts *o, const char *lib, int *rfd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	/* The environment is made here, before the fork: the child only
	 * sets it. */
	char only[4096] = "";
	for (size_t i = 0, at = 0; i < o->nonly && at < sizeof(only); i++)
		at += (size_t)snprintf(only + at, sizeof(only) - at, "%s%s", i ? "," : "", o->only[i]);
	const char *old = getenv("LD_PRELOAD");
	size_t plen = strlen(lib) + (old ? strlen(old) : 0) + 2;
	char *preload = base_alloc(plen);
	if (!preload) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	snprintf(preload, plen, "%s%s%s", lib, old && old[0] ? ":" : "", old ? old : "");
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		base_free(preload);
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		char spec[128];
		unsigned flags = (o->fp_only ? 1u : 0) | (o->fast_walk ? 2u : 0);
		snprintf(spec, sizeof(spec), "%d,%d,0,%u,%u", (int)getpid(), p[1], flags, o->max_frames);
		fcntl(p[1], F_SETFD, 0); /* the preload library makes it close-on-exec again */
		setenv("BACKSTEP_INPROC", spec, 1);
		if (o->from)
			setenv("BACKSTEP_INPROC_FROM", o->from, 1);
		else
			unsetenv("BACKSTEP_INPROC_FROM");
		setenv("BACKSTEP_INPROC_ONLY", only, 1);
		setenv("LD_PRELOAD", preload, 1);
		execvp(argv[0], argv);
		char msg[256];
		snprintf(msg, sizeof(msg), "%d", errno);
		val_inproc_send_text(p[1], 'E', msg);
		_exit(127);
	}
	base_free(preload);
	close(p[1]);
	*rfd = p[0];
	return pid;
}

/* Read one message: 1 with *BUF (the payload after the type) and *TYPE,
 * 0 at the end, -1 interrupted (EINTR), -2 garbage. */
static int read_msg(int fd, uint8_t **buf, size_t *len, uint8_t *type)
{
	uint8_t head[5];
	size_t got = 0;
	while (got < sizeof(head)) {
		ssize_t k = read(fd, head + got, sizeof(head) - got);
		if (k < 0 && errno == EINTR && got == 0)
			return -1;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return got ? -2 : 0;
		got += (size_t)k;
	}
	uint32_t n;
	memcpy(&n, head, 4);
	if (n < 1 || n > (1u << 30))
		return -2;
	*type = head[4];
	*len = n - 1;
	*buf = base_alloc(*len ? *len : 1);
	if (!*buf)
		return -2;
	for (got = 0; got < *len;) {
		ssize_t k = read(fd, *buf + got, *len - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			base_free(*buf);
			return -2;
		}
		got += (size_t)k;
	}
	return 1;
}

/* Add the images up into RES, as one run over the execs would count. */
static void merge(struct image *ims, size_t n, struct val_result *res)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += ims[i].res.nmm;
	res->mm = total ? base_calloc(total, sizeof(*res->mm)) : NULL;
	for (size_t i = 0; i < n; i++) {
		struct val_result *r = &ims[i].res;
		struct val_stats *a = &res->stats;
		const struct val_stats *b = &r->stats;
		a->insns_stepped += b->insns_stepped;
		a->insns_checked += b->insns_checked;
		a->distinct_pcs += b->distinct_pcs;
		a->frames_checked += b->frames_checked;
		a->regs_checked += b->regs_checked;
		a->walk_ends += b->walk_ends;
		a->bad_insns += b->bad_insns;
		a->nocfi_insns += b->nocfi_insns;
		a->frames_fallback += b->frames_fallback;
		a->fast_walks += b->fast_walks;
		a->fast_frames += b->fast_frames;
		a->fast_handovers += b->fast_handovers;
		a->threads += b->threads;
		a->signals += b->signals;
		a->execs += b->execs + (i > 0 && (r->started || b->insns_stepped));
		a->anomalies += b->anomalies;
		a->refreshes += b->refreshes;
		a->free_runs += b->free_runs;
		a->reentries += b->reentries;
		a->breakpoints = b->breakpoints; /* the last image's */
		a->seconds += b->seconds;
		res->started |= r->started;
		if (r->error && !res->error) {
			res->error = r->error;
			r->error = NULL;
		}
		for (size_t k = 0; res->mm && k < r->nmm; k++) {
			res->mm[res->nmm] = r->mm[k];
			res->mm[res->nmm].image = ims[i].seq;
			res->nmm++;
		}
		base_free(r->mm);
		r->mm = NULL;
		r->nmm = 0;
		val_result_free(r);
	}
}

int val_inproc_run(char *const *argv, const struct val_opts *o, struct val_result *res,
		   char *note, size_t notelen)
{
	char lib[PATH_MAX] = "";
	memset(res, 0, sizeof(*res));
	res->driver = "inproc";
	if (!applies(argv, o, note, notelen, lib, sizeof(lib)))
		return BK_E_UNSUPPORTED;
	int fd = -1;
	pid_t pid = spawn(argv, o, lib, &fd);
	if (pid < 0) {
		char buf[512];
		snprintf(buf, sizeof(buf), "cannot run %s: %s", argv[0], strerror(errno));
		res->error = base_strdup(buf);
		return BK_E_IO;
	}
	struct image *ims = NULL;
	size_t nims = 0;
	bool killed = false;
	for (;;) {
		if (o->stop && *o->stop && !killed) {
			kill(pid, SIGKILL);
			killed = true;
			res->interrupted = true;
		}
		uint8_t *buf, type;
		size_t len;
		int k = read_msg(fd, &buf, &len, &type);
		if (k == -1)
			continue;
		if (k == -2 && !res->error)
			res->error = base_strdup("the in-process checker sent garbage");
		if (k <= 0)
			break;
		struct rbuf r = { buf, buf + len, false };
		if (type == 'R') {
			struct image tmp = { 0 };
			if (decode_result(buf, len, &tmp)) {
				size_t i = 0;
				while (i < nims && ims[i].seq != tmp.seq)
					i++;
				if (i == nims) {
					void *q = base_realloc(ims, (nims + 1) * sizeof(*ims));
					if (q) {
						ims = q;
						ims[nims++] = tmp;
					} else {
						val_result_free(&tmp.res);
					}
				} else {
					val_result_free(&ims[i].res);
					ims[i] = tmp;
				}
				if (o->progress && i < nims)
					o->progress(o->progress_ctx, &ims[i].res.stats);
			} else if (!res->error) {
				res->error = base_strdup("the in-process checker sent a bad result");
			}
		} else if (type == 'E') {
			char *e = r_str(&r);
			char msg[512];
			snprintf(msg, sizeof(msg), "%.200s: cannot run: %s", argv[0],
				 strerror(e ? atoi(e) : 0));
			base_free(e);
			base_free(res->error);
			res->error = base_strdup(msg);
		}
		base_free(buf);
	}
	close(fd);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		if (o->stop && *o->stop && !killed) {
			kill(pid, SIGKILL);
			killed = true;
			res->interrupted = true;
		}
	res->status = st;
	res->exited = true;
	char *err = res->error;
	res->error = NULL;
	merge(ims, nims, res);
	base_free(ims);
	res->arch = BK_ARCH_X86_64; /* applies() let only x86-64 programs through */
	if (err) {
		base_free(res->error);
		res->error = err;
	}
	if (!res->started && !res->error && nims == 0 && !res->interrupted && WIFEXITED(st) &&
	    WEXITSTATUS(st) != 127)
		res->error = base_strdup("the in-process checker never reported (the program did not "
					 "load its library: a setuid program, or one that clears "
					 "LD_PRELOAD?)");
	return 0;
}
