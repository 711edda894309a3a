/* The local target: this process, read from inside (bk_backtrace, a cursor
 * started in a signal handler). Everything here is async-signal-safe: no
 * allocation, no locks, no stdio, errno preserved.
 *
 * Memory: an address inside the calling thread's stack is read directly;
 * the stack's bounds are found once per thread from /proc/self/maps with raw
 * open/read (AS-safe) and kept in initial-exec TLS (no allocation, even in
 * a shared library). Any other address goes through process_vm_readv on
 * ourselves, which reports an unmapped address instead of faulting; where
 * that system call is refused (qemu-user has none, a seccomp filter may
 * forbid it), through a pipe, which fails the same way (pipe_read).
 *
 * Modules: _dl_find_object (glibc 2.35+), lock-free and AS-safe, gives the
 * mapping of an address and its PT_GNU_EH_FRAME; the program headers fill
 * in what it leaves out (local_phdr.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <unistd.h>

#include "target.h"

static __thread uint64_t stack_lo __attribute__((tls_model("initial-exec")));
static __thread uint64_t stack_hi __attribute__((tls_model("initial-exec")));
static __thread int stack_known __attribute__((tls_model("initial-exec")));

static bool parse_hex(const char **p, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0;
	for (; *p < end; (*p)++, n++) {
		char c = **p;
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16u;
		if (d == 16)
			break;
		x = x << 4 | d;
	}
	*v = x;
	return n > 0;
}

/* The mapping of /proc/self/maps holding ADDR, scanned with a fixed buffer. */
static bool find_mapping(uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char buf[4096];
	size_t have = 0;
	bool found = false;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		size_t start = 0;
		const char *nl;
		/* memchr: pure computation, safe in a signal handler. */
		while ((nl = memchr(buf + start, '\n', have - start)) != NULL) {
			const char *p = buf + start, *end = nl;
			uint64_t a, b;
			if (parse_hex(&p, end, &a) && p < end && *p++ == '-' && parse_hex(&p, end, &b) &&
			    addr >= a && addr < b) {
				*lo = a;
				*hi = b;
				found = true;
				break;
			}
			start = (size_t)(nl - buf) + 1;
		}
		if (found)
			break;
		/* Keep the partial last line. */
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == sizeof(buf))
			have = 0; /* an absurdly long line: skip it */
	}
	close(fd);
	return found;
}

void tgt_local_note_stack(uint64_t sp)
{
	if (stack_known && sp >= stack_lo && sp < stack_hi)
		return;
	int saved = errno;
	uint64_t lo, hi;
	if (find_mapping(sp, &lo, &hi)) {
		stack_lo = lo;
		stack_hi = hi;
		stack_known = 1;
	}
	errno = saved;
}

void tgt_local_stack(uint64_t *lo, uint64_t *hi)
{
	*lo = stack_known ? stack_lo : 0;
	*hi = stack_known ? stack_hi : 0;
}

/* Copy LEN bytes of our stack with loads the sanitizer does not check and
 * the compiler cannot turn into a (checked) memcpy call. */
static BK_NO_ASAN void copy_stack(void *dst, uint64_t addr, size_t len)
{
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)addr;
	uint8_t *d = dst;
	for (size_t i = 0; i < len; i++)
		d[i] = p[i];
}

/* LEN bytes at ADDR copied through a pipe of our own: write(2) reads our
 * memory in the kernel and fails with EFAULT at an unreadable page instead
 * of faulting, read(2) gives the bytes back. A new pipe per call keeps
 * concurrent readers (threads, a signal handler interrupting one) apart:
 * five system calls, paid only where process_vm_readv is refused and only
 * off the thread's stack. At most PIPE_BUF (4096) bytes per write, so a
 * write never blocks on a full pipe. */
static int pipe_read(uint64_t addr, void *dst, size_t len)
{
	if (len > UINT64_MAX - addr)
		return BK_E_MEMORY;
	int fd[2];
	if (pipe2(fd, O_CLOEXEC | O_NONBLOCK) != 0)
		return BK_E_MEMORY;
	int rc = 0;
	uint8_t *d = dst;
	for (size_t done = 0; done < len && rc == 0;) {
		size_t n = len - done < 4096 ? len - done : 4096;
		ssize_t w = write(fd[1], (const void *)(uintptr_t)(addr + done), n);
		if (w <= 0 || read(fd[0], d + done, (size_t)w) != w)
			rc = BK_E_MEMORY;
		else
			done += (size_t)w;
	}
	close(fd[0]);
	close(fd[1]);
	return rc;
}

/* Set once process_vm_readv on ourselves was refused (ENOSYS, EPERM). */
static _Atomic bool vm_readv_refused;

int tgt_local_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	if (stack_known && addr >= stack_lo && addr < stack_hi && len <= stack_hi - addr) {
		if (len == 8) { /* the common case: one stack slot */
			uint64_t w = tgt_local_stack_word(addr);
			__builtin_memcpy(dst, &w, 8);
		} else {
			copy_stack(dst, addr, len);
		}
		return 0;
	}
	int saved = errno, rc;
	if (atomic_load_explicit(&vm_readv_refused, memory_order_relaxed)) {
		rc = pipe_read(addr, dst, len);
	} else {
		struct iovec local = { dst, len }, remote = { (void *)(uintptr_t)addr, len };
		ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
			atomic_store_explicit(&vm_readv_refused, true, memory_order_relaxed);
			rc = pipe_read(addr, dst, len);
		} else {
			rc = n == (ssize_t)len ? 0 : BK_E_MEMORY;
		}
	}
	errno = saved;
	return rc;
}

int tgt_local_find_object(uint64_t addr, struct tgt_local_object *out)
{
	struct dl_find_object dlfo;
	if (_dl_find_object((void *)(uintptr_t)addr, &dlfo) != 0)
		/* Not an object the dynamic linker knows (or it keeps no list):
		 * the main program and the vDSO are in the auxiliary vector. */
		return tgt_local_main_object(addr, out) || tgt_local_vdso_object(addr, out)
			       ? 0 : BK_E_NOT_FOUND;
	out->start = (uint64_t)(uintptr_t)dlfo.dlfo_map_start;
	out->end = (uint64_t)(uintptr_t)dlfo.dlfo_map_end;
	out->eh_frame_hdr = (uint64_t)(uintptr_t)dlfo.dlfo_eh_frame;
	out->handle = dlfo.dlfo_link_map;
	out->bias = dlfo.dlfo_link_map ? (uint64_t)dlfo.dlfo_link_map->l_addr : 0;
	out->name = dlfo.dlfo_link_map && dlfo.dlfo_link_map->l_name ? dlfo.dlfo_link_map->l_name
								     : "";
	/* The main program: in a static program (static-pie too) glibc 2.36's
	 * _dl_find_object gives only the PT_LOAD segment holding ADDR, which
	 * need not hold its PT_GNU_EH_FRAME, if it has one, nor its .eh_frame.
	 * Its program headers give the whole span (in a dynamic program the
	 * same as the dynamic linker's); the link_map stays its identity. */
	struct tgt_local_object main;
	if (!out->name[0] && tgt_local_main_object(addr, &main)) {
		out->start = main.start;
		out->end = main.end;
		out->bias = main.bias;
		if (!out->eh_frame_hdr)
			out->eh_frame_hdr = main.eh_frame_hdr;
	}
	return 0;
}

size_t tgt_local_permanent(uint64_t *addr, size_t max)
{
	/* Objects of this process that are never unloaded: the program, the
	 * dynamic linker, the vDSO (from the auxiliary vector, a static copy:
	 * AS-safe), the C library and this library (our own code). */
	int saved = errno; /* getauxval sets it when an entry is missing (no vDSO) */
	uint64_t cand[5] = {
		getauxval(AT_PHDR),
		getauxval(AT_BASE),
		getauxval(AT_SYSINFO_EHDR),
		(uint64_t)(uintptr_t)&getpid,
		(uint64_t)(uintptr_t)&tgt_local_permanent,
	};
	errno = saved;
	size_t n = 0;
	for (size_t i = 0; i < 5 && n < max; i++)
		if (cand[i])
			addr[n++] = cand[i];
	return n;
}
