/* The live-process target through the public API: attach to a child parked
 * in a known chain of calls, walk its thread, release it (it runs on, and
 * answers), symbolize the frames afterwards, and see walks fail once it is
 * released. Errors: a pid that is not a process, a pid of nobody. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backstep.h"
#include "check.h"

static int to_parent[2];

static void on_usr1(int sig)
{
	(void)sig;
	char c = 'u';
	if (write(to_parent[1], &c, 1) != 1)
		_exit(3);
}

__attribute__((noinline)) void target_park(void)
{
	char c = 'r';
	if (write(to_parent[1], &c, 1) != 1)
		_exit(3);
	for (;;)
		pause();
}

__attribute__((noinline)) void target_middle(void)
{
	target_park();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void target_outer(void)
{
	target_middle();
	__asm__ volatile("" ::: "memory");
}

/* One byte from the child within 5 s (a child still stopped never sends). */
static bool child_says(char want)
{
	struct pollfd p = { .fd = to_parent[0], .events = POLLIN };
	char c;
	return poll(&p, 1, 5000) == 1 && read(to_parent[0], &c, 1) == 1 && c == want;
}

static bool frames_name(struct bk_space *s, const uint64_t *lookups, int n, const char *fn)
{
	for (int i = 0; i < n; i++) {
		struct bk_symbol sym[8];
		int k = bk_space_symbolize(s, lookups[i], sym, 8);
		for (int j = 0; j < k; j++)
			if (sym[j].function && strcmp(sym[j].function, fn) == 0)
				return true;
	}
	return false;
}

int main(void)
{
	if (pipe(to_parent)) {
		perror("pipe");
		return 1;
	}
	pid_t child = fork();
	if (child == 0) {
		signal(SIGUSR1, on_usr1);
		target_outer();
		_exit(0);
	}
	CHECK(child_says('r'), "the child got ready");
	usleep(20000); /* into pause() */

	struct bk_target *t = NULL;
	int err = bk_target_attach(child, &t);
	CHECK_INT(err, 0, "bk_target_attach");
	if (!err) {
		CHECK_INT(bk_target_nthreads(t), 1, "threads");
		struct bk_thread_info info;
		struct bk_regs regs;
		CHECK_INT(bk_target_thread(t, 0, &info, &regs), 0, "thread 0");
		CHECK_INT(info.tid, child, "its tid");

		struct bk_space *s = bk_target_space(t);
		struct bk_cursor cur;
		uint64_t lookups[64];
		int n = 0, rc = bk_cursor_init(&cur, s, &regs);
		CHECK_INT(rc, 0, "cursor init");
		while (!rc && n < 64) {
			lookups[n++] = bk_cursor_lookup_pc(&cur);
			if ((rc = bk_cursor_step(&cur)) == 1)
				rc = 0;
			else
				break;
		}
		CHECK(rc == 0 && n >= 5, "the walk ends normally after >= 5 frames: %d frames, %d", n,
		      rc);

		/* Released: the child runs on and answers a signal; what was
		 * learned stays, so the frames still get names. */
		bk_target_release(t);
		CHECK(kill(child, SIGUSR1) == 0 && child_says('u'), "the released child handles SIGUSR1");
		CHECK(frames_name(s, lookups, n, "target_park") &&
		      frames_name(s, lookups, n, "target_middle") &&
		      frames_name(s, lookups, n, "target_outer") && frames_name(s, lookups, n, "main"),
		      "the frames are named after the release");

		/* The symbol memo: a second space over the same process with the
		 * same cache directory answers exactly the same, from the files
		 * the first one wrote (one per build-id). */
		char cache[64];
		snprintf(cache, sizeof(cache), "/tmp/bk_test_target_XXXXXX");
		CHECK(mkdtemp(cache) != NULL, "a cache directory");
		CHECK_INT(bk_space_set_symbol_cache(s, cache), 0, "set the cache");
		struct bk_target *t2 = NULL;
		CHECK_INT(bk_target_attach(child, &t2), 0, "attach again");
		int same = 0;
		if (t2) {
			struct bk_space *s2 = bk_target_space(t2);
			bk_target_release(t2);
			CHECK_INT(bk_space_set_symbol_cache(s2, cache), 0, "the same cache");
			for (int i = 0; i < n; i++) {
				struct bk_symbol a[8], b[8];
				int na = bk_space_symbolize(s, lookups[i], a, 8);
				int nb = bk_space_symbolize(s2, lookups[i], b, 8);
				bool eq = na == nb;
				for (int j = 0; eq && j < na; j++)
					eq = a[j].offset == b[j].offset && a[j].line == b[j].line &&
					     a[j].inlined == b[j].inlined &&
					     !strcmp(a[j].function ? a[j].function : "",
						     b[j].function ? b[j].function : "") &&
					     !strcmp(a[j].file ? a[j].file : "", b[j].file ? b[j].file : "");
				same += eq;
			}
			bk_target_close(t2);
		}
		CHECK(same == n, "%d of %d frames named the same from the cache", same, n);
		DIR *d = opendir(cache);
		int files = 0;
		for (struct dirent *de; d && (de = readdir(d));)
			if (strstr(de->d_name, ".sym")) {
				char p[512];
				snprintf(p, sizeof(p), "%s/%s", cache, de->d_name);
				files++;
				unlink(p);
			}
		if (d)
			closedir(d);
		rmdir(cache);
		CHECK(files >= 2, "%d cache files (the test program, libc)", files);
		CHECK_INT(bk_space_set_symbol_cache(NULL, cache), BK_E_INVAL, "no space");

		/* Its memory is no longer the stack that was stopped: a walk
		 * from the kept registers fails at its first memory read. */
		rc = bk_cursor_init(&cur, s, &regs);
		int step = rc ? rc : bk_cursor_step(&cur);
		CHECK(step < 0, "a walk after the release fails: %d", step);
		bk_target_release(t); /* twice: nothing more */
		bk_target_close(t);
	}
	kill(child, SIGKILL);
	int st;
	CHECK(waitpid(child, &st, 0) == child && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	      "the child was left running until killed");

	/* Errors. */
	t = (struct bk_target *)1;
	CHECK_INT(bk_target_attach(0, &t), BK_E_INVAL, "pid 0");
	CHECK_INT(bk_target_attach(-5, &t), BK_E_INVAL, "pid -5");
	CHECK_INT(bk_target_attach(child, &t), BK_E_NOT_FOUND, "a reaped child");
	bk_target_release(NULL);
	bk_target_close(NULL);
	return check_summary();
}
