/* Debug files by build-id from debuginfod servers (libdebuginfod), the
 * last place ldr_open_debug_file looks, as gdb, eu-stack and perf do.
 *
 * Asked only when DEBUGINFOD_URLS names a server and nothing turned it off
 * (ldr_debuginfod_off: the CLI's --no-debuginfod). libdebuginfod is loaded
 * with dlopen on the first question, so programs that never ask do not
 * load it (nor its libcurl); without it installed the answer is "not
 * found". Its own cache (DEBUGINFOD_CACHE_PATH, ~/.cache/debuginfod_client)
 * keeps what was fetched.
 *
 * Time is bounded: each fetch may take BACKSTEP_DEBUGINFOD_TIMEOUT seconds
 * (default 10) in all, checked by libdebuginfod's progress callback, which
 * aborts the transfer. A server that fails other than by "not found" (a
 * timeout, a refused connection, garbage) is not asked again in this
 * process, and ldr_debuginfod_problem says what happened, once, for the
 * caller to show. One question at a time (a mutex): the client handle is
 * not shared between threads. Cold; never from a signal handler.
 */
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "loader.h"

static struct {
	pthread_mutex_t lock;
	bool off, tried, broken;
	void *handle;
	debuginfod_client *client;
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
	__typeof__(debuginfod_find_executable) *find_executable;
	__typeof__(debuginfod_set_progressfn) *set_progressfn;
	__typeof__(debuginfod_get_url) *get_url;
	double budget;        /* seconds per fetch */
	struct timespec start;
	bool timed_out;
	char problem[512];
} dfd = { .lock = PTHREAD_MUTEX_INITIALIZER };

void ldr_debuginfod_off(void)
{
	pthread_mutex_lock(&dfd.lock);
	dfd.off = true;
	pthread_mutex_unlock(&dfd.lock);
}

const char *ldr_debuginfod_problem(void)
{
	return dfd.problem[0] ? dfd.problem : NULL;
}

static int progress(debuginfod_client *c, long a, long b)
{
	(void)c;
	(void)a;
	(void)b;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double t = (double)(now.tv_sec - dfd.start.tv_sec) + (now.tv_nsec - dfd.start.tv_nsec) / 1e9;
	if (t < dfd.budget)
		return 0;
	dfd.timed_out = true;
	return 1; /* abort the transfer */
}

/* Load libdebuginfod and make a client, once (under the lock). */
static bool ready(void)
{
	if (dfd.tried)
		return dfd.client != NULL;
	dfd.tried = true;
	const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
	if (!urls || !urls[strspn(urls, " \t")])
		return false;
	const char *t = getenv("BACKSTEP_DEBUGINFOD_TIMEOUT");
	dfd.budget = t && atof(t) > 0 ? atof(t) : 10.0;
	if (!(dfd.handle = dlopen(DEBUGINFOD_SONAME, RTLD_NOW | RTLD_LOCAL)))
		return false;
	/* POSIX: a function pointer round-trips through void *. */
	*(void **)&dfd.begin = dlsym(dfd.handle, "debuginfod_begin");
	*(void **)&dfd.find_debuginfo = dlsym(dfd.handle, "debuginfod_find_debuginfo");
	*(void **)&dfd.find_executable = dlsym(dfd.handle, "debuginfod_find_executable");
	*(void **)&dfd.set_progressfn = dlsym(dfd.handle, "debuginfod_set_progressfn");
	*(void **)&dfd.get_url = dlsym(dfd.handle, "debuginfod_get_url");
	if (!dfd.begin || !dfd.find_debuginfo || !dfd.find_executable || !dfd.set_progressfn ||
	    !(dfd.client = dfd.begin()))
		return false; /* the handle stays: nothing to gain from closing it */
	dfd.set_progressfn(dfd.client, progress);
	return true;
}

static int fetch(const uint8_t *build_id, size_t len, bool executable, char **path)
{
	*path = NULL;
	if (len == 0 || len > LDR_MAX_BUILD_ID)
		return BK_E_NOT_FOUND;
	pthread_mutex_lock(&dfd.lock);
	int err = BK_E_NOT_FOUND;
	if (!dfd.off && !dfd.broken && ready()) {
		clock_gettime(CLOCK_MONOTONIC, &dfd.start);
		dfd.timed_out = false;
		char *got = NULL;
		int fd = (executable ? dfd.find_executable : dfd.find_debuginfo)(
			dfd.client, build_id, (int)len, &got);
		if (fd >= 0) {
			close(fd);
			if (got && (*path = base_strdup(got)))
				err = 0;
			else if (got)
				err = BK_E_NOMEM;
		} else if (fd != -ENOENT || dfd.timed_out) {
			/* Not "not found" (libdebuginfod 0.188 says ENOENT for a
			 * transfer the progress callback cancelled too): the server
			 * is slow, down or broken. */
			dfd.broken = true;
			const char *url = dfd.get_url ? dfd.get_url(dfd.client) : NULL;
			if (!url)
				url = getenv(DEBUGINFOD_URLS_ENV_VAR);
			if (dfd.timed_out)
				snprintf(dfd.problem, sizeof(dfd.problem),
					 "debuginfod: no answer within %g s%s%s; not asked again",
					 dfd.budget, url ? " from " : "", url ? url : "");
			else
				snprintf(dfd.problem, sizeof(dfd.problem),
					 "debuginfod: %s%s%s; not asked again", strerror(-fd),
					 url ? ": " : "", url ? url : "");
		}
		free(got);
	}
	pthread_mutex_unlock(&dfd.lock);
	return err;
}

/* Installed when this object is part of the program (see loader.h). */
__attribute__((constructor)) static void install(void)
{
	ldr_debuginfod_fetch = fetch;
}
