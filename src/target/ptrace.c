/* The live-process target: ptrace for stopping threads and reading their
 * registers, process_vm_readv for memory, /proc/PID/maps for the map.
 *
 * Threads are attached with PTRACE_SEIZE + PTRACE_INTERRUPT (no SIGSTOP is
 * sent, so the process sees nothing), repeatedly until a listing of
 * /proc/PID/task brings no new thread. A thread that exits meanwhile is
 * dropped. A signal that arrives while a thread is held is delivered again
 * at detach. tgt_close always detaches every thread it attached.
 *
 * Memory is read through a small cache of blocks, so a walk costs a few
 * process_vm_readv calls per thread, not one per word. A block is the
 * aligned BLOCK_SIZE bytes around the address, cut to the mapping holding
 * it: a read that starts in a guard page or a gap would fail as a whole.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target.h"

#define BLOCK_SIZE 16384u
#define NBLOCKS 16
#define MAX_THREADS 100000

struct block {
	uint64_t addr; /* first byte held; 0 = empty */
	uint32_t len;  /* bytes held from addr */
	uint8_t data[BLOCK_SIZE];
};

struct ptrace_priv {
	struct block blocks[NBLOCKS];
	unsigned next_victim;
	int *resend_sig; /* per thread: signal to deliver at detach */
	bool adopted;    /* the caller traces these threads: do not detach */
	bool released;   /* detached already: no more reads */
};

static int vm_read(int pid, uint64_t addr, void *dst, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n < 0 ? 0 : (int)n;
}

/* Read the block holding ADDR into the next victim; NULL when unreadable. */
static struct block *fill_block(struct tgt *t, uint64_t addr)
{
	struct ptrace_priv *p = t->priv;
	uint64_t lo = addr & ~(uint64_t)(BLOCK_SIZE - 1), hi = lo + BLOCK_SIZE;
	const struct tgt_mapping *m = tgt_mapping_at(t, addr);
	if (m) {
		lo = lo > m->start ? lo : m->start;
		hi = hi < m->end && hi > lo ? hi : m->end;
	}
	struct block *b = &p->blocks[p->next_victim++ % NBLOCKS];
	b->addr = 0;
	int n = vm_read(t->pid, lo, b->data, (size_t)(hi - lo));
	if (n <= 0 || addr - lo >= (uint64_t)n)
		return NULL;
	b->addr = lo;
	b->len = (uint32_t)n;
	return b;
}

static int ptrace_read(struct tgt *t, uint64_t addr, void *dst, size_t len)
{
	struct ptrace_priv *p = t->priv;
	uint8_t *out = dst;
	if (p->released)
		return BK_E_MEMORY; /* the process runs: its memory is not the stack's */
	while (len) {
		struct block *b = NULL;
		for (unsigned i = 0; i < NBLOCKS; i++)
			if (p->blocks[i].len && addr - p->blocks[i].addr < p->blocks[i].len) {
				b = &p->blocks[i];
				break;
			}
		if (!b && !(b = fill_block(t, addr))) {
			/* Not readable as a block (a mapping the map does not show
			 * yet, the vsyscall page): read exactly. */
			int n = vm_read(t->pid, addr, out, len);
			return (size_t)n == len ? 0 : BK_E_MEMORY;
		}
		uint64_t off = addr - b->addr;
		size_t take = b->len - off < len ? (size_t)(b->len - off) : len;
		memcpy(out, b->data + off, take);
		out += take;
		addr += take;
		len -= take;
	}
	return 0;
}

static void detach_all(struct tgt *t)
{
	struct ptrace_priv *p = t->priv;
	if (!p || p->adopted || p->released)
		return;
	for (size_t i = 0; i < t->nthreads; i++) {
		int sig = p->resend_sig ? p->resend_sig[i] : 0;
		ptrace(PTRACE_DETACH, t->threads[i].tid, NULL, (void *)(uintptr_t)sig);
	}
	p->released = true;
}

static void ptrace_close(struct tgt *t)
{
	struct ptrace_priv *p = t->priv;
	detach_all(t);
	if (p)
		base_free(p->resend_sig);
	base_free(p);
}

static const struct tgt_ops ptrace_ops = { ptrace_read, ptrace_close };

#define NT_ARM_PAC_MASK_ 0x406

/* The registers of stopped thread TH in the host's layout (the kernel's
 * NT_PRSTATUS register set: x86-64's user_regs_struct, AArch64's
 * user_pt_regs), as a core holds them; on AArch64 also d8-d15 from
 * NT_FPREGSET and the process's PAC mask (NT_ARM_PAC_MASK, when the CPU
 * has pointer authentication) into T. The AArch64 half is compiled into
 * the AArch64 build but has never run: qemu-user, the only AArch64 here,
 * has no ptrace. */
static int read_thread_regs(struct tgt *t, struct tgt_thread *th)
{
	uint64_t words[TGT_AARCH64_USER_REGS > TGT_X86_64_USER_REGS ? TGT_AARCH64_USER_REGS
								     : TGT_X86_64_USER_REGS];
	struct iovec iov = { words, sizeof(words) };
	if (ptrace(PTRACE_GETREGSET, th->tid, (void *)NT_PRSTATUS, &iov) != 0)
		return BK_E_IO;
	if (t->arch->arch == BK_ARCH_X86_64) {
		if (iov.iov_len < TGT_X86_64_USER_REGS * sizeof(uint64_t))
			return BK_E_IO;
		tgt_regs_x86_64(words, &th->regs);
		return 0;
	}
	if (iov.iov_len < TGT_AARCH64_USER_REGS * sizeof(uint64_t))
		return BK_E_IO;
	tgt_regs_aarch64(words, &th->regs);
	uint8_t fp[TGT_AARCH64_FPSIMD_SIZE + 8];
	iov = (struct iovec){ fp, sizeof(fp) };
	if (ptrace(PTRACE_GETREGSET, th->tid, (void *)NT_FPREGSET, &iov) == 0 &&
	    iov.iov_len >= TGT_AARCH64_FPSIMD_SIZE)
		tgt_fpsimd_aarch64(fp, &th->regs);
	uint64_t pac[2];
	iov = (struct iovec){ pac, sizeof(pac) };
	if (ptrace(PTRACE_GETREGSET, th->tid, (void *)NT_ARM_PAC_MASK_, &iov) == 0 &&
	    iov.iov_len == sizeof(pac))
		t->pac_mask = pac[1]; /* insn_mask: what signs return addresses */
	return 0;
}

static void read_comm(int pid, int tid, char name[16])
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	name[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, name, 15);
	close(fd);
	name[n > 0 ? n : 0] = 0;
	name[strcspn(name, "\n")] = 0;
}

static bool have_tid(const struct tgt *t, int tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return true;
	return false;
}

/* Seize TID and ask it to stop; false if it is gone. */
static bool seize_start(int tid)
{
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0)
		return false;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return false;
	}
	return true;
}

/* Wait until seized TID has stopped; false if it exited meanwhile. *SIG is
 * a signal that stopped it instead of our interrupt, to be delivered again
 * at detach. */
static bool seize_wait(int tid, int *sig)
{
	*sig = 0;
	for (;;) {
		int st;
		pid_t r = waitpid(tid, &st, __WALL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != tid || !WIFSTOPPED(st))
			return false; /* exited or killed while we waited */
		if ((st >> 16) != PTRACE_EVENT_STOP && WSTOPSIG(st) != SIGTRAP)
			*sig = WSTOPSIG(st);
		return true;
	}
}

/* One pass over /proc/PID/task: seize every thread not yet held. All are
 * asked to stop first, then waited for, so they stop in parallel. Returns
 * how many were added, or a negative error. */
static int attach_pass(struct tgt *t, size_t *cap)
{
	struct ptrace_priv *p = t->priv;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? BK_E_NOT_FOUND : BK_E_IO;
	size_t first = t->nthreads;
	int err = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);
		if (tid <= 0 || have_tid(t, tid))
			continue;
		if (t->nthreads == *cap) {
			size_t ncap = *cap ? *cap * 2 : 16;
			if (ncap > MAX_THREADS)
				break;
			void *a = base_realloc(t->threads, ncap * sizeof(*t->threads));
			void *b = a ? base_realloc(p->resend_sig, ncap * sizeof(int)) : NULL;
			if (a)
				t->threads = a;
			if (b)
				p->resend_sig = b;
			if (!a || !b) {
				err = BK_E_NOMEM;
				break;
			}
			*cap = ncap;
		}
		if (!seize_start(tid))
			continue;
		struct tgt_thread *th = &t->threads[t->nthreads];
		memset(th, 0, sizeof(*th));
		th->tid = tid;
		p->resend_sig[t->nthreads] = 0;
		t->nthreads++;
	}
	closedir(d);
	/* Every thread seized above is waited for, also on error: tgt_close
	 * detaches what is in the list, and only a stopped thread detaches. */
	size_t kept = first;
	for (size_t i = first; i < t->nthreads; i++) {
		int sig;
		if (!seize_wait(t->threads[i].tid, &sig))
			continue;
		t->threads[kept] = t->threads[i];
		p->resend_sig[kept] = sig;
		kept++;
	}
	t->nthreads = kept;
	return err ? err : (int)(kept - first);
}

int tgt_ptrace_attach(int pid, struct tgt **out)
{
	if (pid <= 0)
		return BK_E_INVAL;
	if (kill(pid, 0) != 0)
		return errno == ESRCH ? BK_E_NOT_FOUND : BK_E_IO;
	struct tgt *t = base_calloc(1, sizeof(*t));
	struct ptrace_priv *p = base_calloc(1, sizeof(*p));
	if (!t || !p) {
		base_free(t);
		base_free(p);
		return BK_E_NOMEM;
	}
	t->ops = &ptrace_ops;
	t->arch = ARCH_HOST;
	t->pid = pid;
	t->priv = p;

	size_t cap = 0;
	int err = 0, rounds = 0;
	for (;;) {
		int added = attach_pass(t, &cap);
		if (added < 0) {
			err = added;
			break;
		}
		if (added == 0 || ++rounds > 100)
			break;
	}
	if (!err && t->nthreads == 0)
		err = kill(pid, 0) == 0 ? BK_E_IO : BK_E_NOT_FOUND;
	if (!err)
		err = tgt_read_maps(t);
	if (err) {
		tgt_close(t);
		return err;
	}
	for (size_t i = 0; i < t->nthreads; i++) {
		t->threads[i].err = read_thread_regs(t, &t->threads[i]);
		read_comm(pid, t->threads[i].tid, t->threads[i].name);
	}
	*out = t;
	return 0;
}

int tgt_ptrace_adopt(int pid, const int *tids, size_t n, struct tgt **out)
{
	if (pid <= 0 || !tids || n == 0 || n > MAX_THREADS)
		return BK_E_INVAL;
	struct tgt *t = base_calloc(1, sizeof(*t));
	struct ptrace_priv *p = base_calloc(1, sizeof(*p));
	struct tgt_thread *th = base_calloc(n, sizeof(*th));
	if (!t || !p || !th) {
		base_free(t);
		base_free(p);
		base_free(th);
		return BK_E_NOMEM;
	}
	p->adopted = true;
	t->ops = &ptrace_ops;
	t->arch = ARCH_HOST;
	t->pid = pid;
	t->priv = p;
	t->threads = th;
	t->nthreads = n;
	for (size_t i = 0; i < n; i++) {
		th[i].tid = tids[i];
		th[i].err = read_thread_regs(t, &th[i]);
		read_comm(pid, tids[i], th[i].name);
	}
	int err = tgt_read_maps(t);
	if (err) {
		tgt_close(t);
		return err;
	}
	*out = t;
	return 0;
}

/* Is every byte of B in one mapping that cannot be written? */
static bool block_read_only(const struct tgt *t, const struct block *b)
{
	const struct tgt_mapping *m = tgt_mapping_at(t, b->addr);
	return m && !m->w && b->addr + b->len <= m->end;
}

void tgt_release(struct tgt *t)
{
	if (t && t->ops == &ptrace_ops)
		detach_all(t);
}

void tgt_invalidate(struct tgt *t, bool all)
{
	if (!t || t->ops != &ptrace_ops)
		return;
	struct ptrace_priv *p = t->priv;
	for (unsigned i = 0; i < NBLOCKS; i++) {
		struct block *b = &p->blocks[i];
		if (b->len && !all && block_read_only(t, b))
			continue;
		b->addr = 0;
		b->len = 0;
	}
}

int tgt_read_mem(void *ctx, uint64_t addr, void *dst, size_t len)
{
	struct tgt *t = ctx;
	return t->ops->read(t, addr, dst, len);
}

void tgt_close(struct tgt *t)
{
	if (!t)
		return;
	t->ops->close(t);
	tgt_free_maps(t);
	base_free(t->map_check);
	base_free(t->threads);
	base_free(t);
}
