/* Targets: where registers and memory come from. A target is an ops table
 * (read memory; the threads and their registers, captured when the target
 * was opened; the mappings of the address space) and nothing above this
 * layer knows whether it is a live process under ptrace, a core file or a
 * snapshot. src/unwind composes a target with an address space.
 *
 * Opening and closing are cold. tgt_read is what a walk calls; it never
 * allocates and reports an unreadable address as BK_E_MEMORY.
 */
#ifndef BK_TARGET_H
#define BK_TARGET_H

#include <signal.h>
#include <sys/types.h>

#include "../arch/arch.h"
#include "../base/base.h"

struct tgt_thread {
	int tid;
	char name[16];          /* comm (a core: the process's), NUL-terminated */
	int err;                /* 0, or why its registers could not be read */
	struct bk_regs regs;
};

/* One line of the target's memory map. */
struct tgt_mapping {
	uint64_t start, end, offset;
	bool r, w, x;
	const char *path;       /* "" for anonymous; "[vdso]", "[stack]" … */
};

/* What a target knows about the file named by a mapping: whether it is the
 * file that was mapped, judged by comparing its GNU build-id with the one in
 * the target's own memory (the ELF header page a core keeps). */
enum tgt_file_check {
	TGT_FILE_UNCHECKED = 0, /* no verdict: use the file if it opens */
	TGT_FILE_MATCHES,       /* build-ids equal */
	TGT_FILE_DIFFERS,       /* another file now: do not use it */
};

struct tgt_ops;

struct tgt {
	const struct tgt_ops *ops;
	const struct arch_info *arch;
	int pid;                /* the live process; 0 when there is none (a core) */
	struct tgt_thread *threads;
	size_t nthreads;
	struct tgt_mapping *maps;
	size_t nmaps;
	uint8_t *map_check;     /* per maps[] entry an enum tgt_file_check, or NULL */
	struct bk_signal_info signal; /* a core's (signo 0: none) */
	uint64_t pac_mask;      /* AArch64: the bits of a signed code pointer (0: unknown) */
	void *priv;
};

struct tgt_ops {
	int (*read)(struct tgt *t, uint64_t addr, void *dst, size_t len);
	void (*close)(struct tgt *t);
};

/* Attach to every thread of PID (PTRACE_SEIZE + PTRACE_INTERRUPT), read
 * their registers (PTRACE_GETREGSET) and the memory map. Errors: BK_E_NOT_FOUND
 * (no such process), BK_E_IO (permission denied or the process vanished),
 * BK_E_UNSUPPORTED (an architecture other than the host's). */
BK_HIDDEN int tgt_ptrace_attach(int pid, struct tgt **out);

/* Open the ELF core file CORE_PATH (x86-64, little-endian ELF64): one
 * thread per NT_PRSTATUS note (registers from pr_reg; name from NT_PRPSINFO's
 * pr_fname, the only one a core keeps), the mappings from NT_FILE plus the
 * other PT_LOAD segments (the vDSO named from NT_AUXV), memory from the
 * dumped bytes, else from the mapped file. EXE_PATH (may be NULL) replaces
 * the path of the main executable (the file mapped at AT_ENTRY). Files whose
 * build-id differs from the core's are marked TGT_FILE_DIFFERS and never
 * read. Errors: BK_E_IO (cannot open or read; a directory), BK_E_NOT_ELF,
 * BK_E_UNSUPPORTED (an ELF that is not a core, or a core of another machine,
 * class or byte order), BK_E_CORRUPT (headers or notes cut or malformed),
 * BK_E_NOMEM. A thread whose NT_PRSTATUS is too short has err set. */
/* SYSROOT (may be NULL): where the files a core names are looked for
 * first. FETCH (may be NULL): a file of the core that is not on disk, by
 * the build-id the core kept: 0 and *PATH (from the funnel), or an error. */
typedef int tgt_fetch_fn(const uint8_t *build_id, size_t len, char **path);
BK_HIDDEN int tgt_core_open(const char *core_path, const char *exe_path, const char *sysroot,
			    tgt_fetch_fn *fetch, struct tgt **out);

/* The x86-64 general registers as struct user_regs_struct lays them out
 * (also pr_reg of NT_PRSTATUS): 27 words, r15 first. */
#define TGT_X86_64_USER_REGS 27
/* Convert them to DWARF numbering (rax..r15, rip, rflags); one copy shared by
 * the ptrace and core targets. Host-independent. */
BK_HIDDEN void tgt_regs_x86_64(const uint64_t user_regs[TGT_X86_64_USER_REGS], struct bk_regs *out);
/* The kernel's AArch64 user_pt_regs (x0..x30, sp, pc, pstate: NT_PRSTATUS)
 * to DWARF numbering (x0..x30 0..30, sp 31, pc 32); and the low halves of
 * v8..v15 of user_fpsimd_state (NT_FPREGSET: 32 16-byte vregs, fpsr,
 * fpcr), d8..d15 (72..79), into OUT. */
#define TGT_AARCH64_USER_REGS 34
#define TGT_AARCH64_FPSIMD_SIZE (32 * 16 + 8)
BK_HIDDEN void tgt_regs_aarch64(const uint64_t user_regs[TGT_AARCH64_USER_REGS], struct bk_regs *out);
BK_HIDDEN void tgt_fpsimd_aarch64(const uint8_t *fpsimd, struct bk_regs *out);

/* The same over threads TIDS of PID that the caller already traces and has
 * stopped (backstep run): nothing is attached, and closing detaches nothing. */
BK_HIDDEN int tgt_ptrace_adopt(int pid, const int *tids, size_t n, struct tgt **out);

/* Forget the memory a live target has cached: the process ran since it was
 * read (a validator stepping it between walks). Unless ALL, blocks lying
 * wholly in a mapping without write permission (code, read-only data) are
 * kept: the caller promises t->maps is current (it re-reads the map after
 * any mmap, munmap, mprotect or mremap, and then passes ALL). Registers and
 * the map are left alone. Nothing to do for other targets. */
BK_HIDDEN void tgt_invalidate(struct tgt *t, bool all);

/* Read target memory: 0 or BK_E_MEMORY. Shaped as bk_target_ops.read_mem. */
BK_HIDDEN int tgt_read_mem(void *t, uint64_t addr, void *dst, size_t len);

/* Detach (a live process runs on) and free. */
BK_HIDDEN void tgt_close(struct tgt *t);
/* A live target: detach now (the process runs on); reads fail from then
 * on. Adopted threads and cores: nothing. */
BK_HIDDEN void tgt_release(struct tgt *t);

/* ---- This process (local.c): all AS-safe ---- */

/* Learn the bounds of the calling thread's stack (the mapping holding SP)
 * once per thread, so reads inside it are direct loads. */
BK_HIDDEN void tgt_local_note_stack(uint64_t sp);
/* The calling thread's stack as noted, or [0, 0) if not known: reads
 * inside it may be plain loads. */
BK_HIDDEN void tgt_local_stack(uint64_t *lo, uint64_t *hi);
/* One word of the calling thread's stack at ADDR, inside those bounds: a
 * plain load the sanitizer does not check (the word is another frame's). */
static inline BK_NO_ASAN uint64_t tgt_local_stack_word(uint64_t addr)
{
	uint64_t w;
	__builtin_memcpy(&w, (const void *)(uintptr_t)addr, 8);
	return w;
}
/* Read our own memory without faulting: 0 or BK_E_MEMORY. */
BK_HIDDEN int tgt_local_read(void *ctx, uint64_t addr, void *dst, size_t len);

/* One assembly file per host architecture (local_<cpu family>.S). */
/* The caller's registers as they are right after this call returns, into
 * OUT[slot] for the host's slots (arch.h): every callee-saved register,
 * the SP (the caller's, after the return) and the PC (the return
 * address); on AArch64 also x30, which still holds that return address.
 * The other slots are written or not and mean nothing. Touches no memory
 * but OUT: AS-safe. */
BK_HIDDEN void tgt_local_capture(uint64_t out[ARCH_MAX_SLOTS]);
/* RA without pointer-authentication bits, as this process's CPU signs
 * them: AArch64 xpaclri (a hint: a no-op where the CPU has no PAuth);
 * unchanged on x86-64. AS-safe. */
BK_HIDDEN uint64_t tgt_local_strip_pac(uint64_t ra);

/* Up to MAX addresses, each inside an object of this process that is never
 * unloaded (the program, the dynamic linker, the vDSO, the C library, this
 * library); returns how many. AS-safe. */
BK_HIDDEN size_t tgt_local_permanent(uint64_t *addr, size_t max);
/* The loaded object holding ADDR: from _dl_find_object; the main program
 * from its program headers when it has no PT_GNU_EH_FRAME (a static
 * program: _dl_find_object gives only the segment holding ADDR); the main
 * program and the vDSO from the auxiliary vector when _dl_find_object does
 * not know ADDR (local_phdr.c). */
struct tgt_local_object {
	uint64_t start, end;     /* the object's mapping */
	uint64_t eh_frame_hdr;   /* runtime address of PT_GNU_EH_FRAME, or 0 */
	uint64_t bias;           /* l_addr: runtime = link-time + bias */
	const void *handle;      /* its link_map: identity while loaded */
	const char *name;        /* l_name ("" for the main program) */
};
BK_HIDDEN int tgt_local_find_object(uint64_t addr, struct tgt_local_object *out);
/* The main program (AT_PHDR) or the vDSO (AT_SYSINFO_EHDR) if it holds
 * ADDR, described by its program headers: the span of its PT_LOAD
 * segments, its bias, PT_GNU_EH_FRAME; a stand-in handle, name "" or
 * "[vdso]". Worked out once. AS-safe. */
BK_HIDDEN bool tgt_local_main_object(uint64_t addr, struct tgt_local_object *out);
BK_HIDDEN bool tgt_local_vdso_object(uint64_t addr, struct tgt_local_object *out);
/* Where OBJ's .eh_frame is loaded (runtime address and length), for an
 * object without a usable PT_GNU_EH_FRAME: from the section headers of its
 * file (the main program: /proc/self/exe, else AT_EXECFN; a library: its
 * name), used only when the file's program headers, notes and the start of
 * its .eh_frame match memory. About 20 system calls (openat, pread64,
 * process_vm_readv, close), no allocation: AS-safe, errno preserved.
 * BK_E_NOT_FOUND when no such file or section. */
BK_HIDDEN int tgt_local_eh_frame(const struct tgt_local_object *obj, uint64_t *addr,
				 uint64_t *len);

/* Read /proc/PID/maps into t->maps (shared by the live targets). */
BK_HIDDEN int tgt_read_maps(struct tgt *t);
BK_HIDDEN void tgt_free_maps(struct tgt *t);
/* The mapping of t->maps (sorted, as /proc gives them) holding ADDR, or NULL. */
BK_HIDDEN const struct tgt_mapping *tgt_mapping_at(const struct tgt *t, uint64_t addr);
/* The number on the line "KEY:" of /proc/PID/status, in BASE (16: the
 * masks SigCgt, SigIgn, ...; 10: Tgid, PPid, ...), 0 when unreadable. */
BK_HIDDEN uint64_t tgt_proc_status_field(int pid, const char *key, int base);
/* Whether a signal's si_addr is the faulting address: a fault the CPU
 * raised (si_code > 0) of SIGSEGV, SIGBUS, SIGILL or SIGFPE. */
static inline bool tgt_signal_has_addr(int signo, int code)
{
	return code > 0 && (signo == SIGSEGV || signo == SIGBUS || signo == SIGILL ||
			    signo == SIGFPE);
}
/* Its hexadecimal masks (SigCgt, SigIgn, ...). */
static inline uint64_t tgt_proc_status_mask(int pid, const char *key)
{
	return tgt_proc_status_field(pid, key, 16);
}

#endif
