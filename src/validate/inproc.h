/* What the files of the in-process driver's preload library share
 * (inproc_preload.c, the driver; inproc_heap.c, its private heap). Not
 * part of the CLI: only the preload library is built from these. */
#ifndef BK_INPROC_H
#define BK_INPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include <capstone/capstone.h>

/* A system call without the C library (its wrappers may be where a step
 * planted an int3, and set errno): the raw result, -errno on failure. */
static inline long ip_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall" : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Non-zero while this thread runs the driver: its SIGTRAP and signal
 * handlers, and the few places where it runs the checker outside them.
 * Every allocation made meanwhile, whoever makes it, is the private
 * heap's; signals are blocked throughout (inproc_heap.c relies on it). */
extern __thread int ip_inside __attribute__((tls_model("initial-exec")));

/* Is P a block of the private heap? */
bool ip_heap_owns(const void *p);
/* Where the program's executable defines malloc itself: point the
 * allocator slots of the loaded libraries at ours (inproc_heap.c). */
void ip_heap_take_over(void);
/* Forget the heap's lock after fork (a copy of another thread's hold). */
void ip_heap_after_fork(void);

/* Memory of the program read or written by one load or store of SIZE
 * (1, 2, 4, 8) bytes, a fault taken back (inproc_preload.c, "Reading
 * memory"): 0, or -1 when it faults. */
int ip_probe_load(uint64_t addr, unsigned size, uint64_t *out);
int ip_probe_store(uint64_t addr, unsigned size, uint64_t value);

/* One instruction made by the driver itself (inproc_emu.c). */
enum { EMU_NONE = 0, EMU_NOP, EMU_MOV, EMU_MOVZX, EMU_MOVSX, EMU_LEA, EMU_PUSH, EMU_POP,
       EMU_LEAVE, EMU_ALU, EMU_ALU1, EMU_CMOV, EMU_SETCC };
struct ip_emu_opnd {
	uint8_t kind;            /* none, register, immediate, memory */
	uint8_t reg, shift;      /* register: ucontext index; 8 for ah..bh */
	uint8_t base, index, scale; /* memory */
	int64_t v;               /* immediate; memory: displacement */
};
struct ip_emu {
	uint8_t kind;            /* EMU_*: EMU_NONE when not made here */
	uint8_t alu;             /* ALU, ALU1: which */
	uint8_t size, src_size;  /* bytes */
	uint8_t cc;              /* CMOV, SETCC: the condition (0-15) */
	struct ip_emu_opnd dst, src;
};
/* Whether instruction I (decoded with detail) is one made here (*E). */
bool ip_emu_decode(const cs_insn *i, struct ip_emu *e);
/* The part of the thread's stack the driver is using: [LO, HI). */
struct ip_emu_guard {
	uint64_t lo, hi;
};
/* Make E on the registers GR, NEXT the address after it: false (nothing
 * changed) when a memory access would fault or a store land in GUARD. */
bool ip_emu_run(const struct ip_emu *e, uint64_t next, greg_t *gr, const struct ip_emu_guard *guard);
/* Whether condition CC (jcc's 0-15) holds under GR's flags. */
bool ip_emu_cond(uint8_t cc, const greg_t *gr);

#endif
