/* src/profile, from samples to stacks (prof_stack.c): the processes of a
 * recording as address spaces, each sample's user stack walked in its
 * process's space. Kept apart from prof.h (the reader) only while the
 * reader is being written; the two become one header. */
#ifndef BK_PROF_STACK_H
#define BK_PROF_STACK_H

#include "prof.h"

struct prof_stacks;

struct prof_stack_stats {
	uint64_t samples;      /* walked (prof_stacks_walk calls) */
	uint64_t complete;     /* walked to the outermost frame */
	uint64_t truncated;    /* stopped early (an error: see prof_walk) */
	uint64_t no_regs;      /* no user registers (kernel threads, ABI none) */
	uint64_t no_stack;     /* no stack copy: the interrupted PC only */
	uint64_t modules;      /* executable file mappings added */
	uint64_t build_id_differs; /* files not used: their build-id is not the
				      one perf recorded (prof_stacks_differing) */
	uint64_t jitdumps;     /* jitdumps processes mapped */
	uint64_t jitdumps_unread; /* ... that could not be read */
	uint64_t jitdump_reads; /* times one was read again, having grown */
};

/* How one sample's walk went. */
struct prof_walk {
	const char *comm;      /* the process's name, "" if unknown */
	struct bk_space *space; /* where its PCs are (bk_space_module_at) */
	/* The process's module map as it is now: a number no other map of
	 * this or any process had, so (map, PC) names the same frame in every
	 * sample that has it; 0 when the sample has no process. */
	uint64_t map;
	int ended;             /* 0: to the outermost frame; else BK_E_* */
	const char *reason;    /* ended != 0: why, for the summary */
};

/* The bytes, laid out as a file, of what PATH's modules were read from:
 * for "[vdso]" an image from memory, which has no file to name its
 * frames by. Valid until prof_stacks_free; false when it could not be
 * opened. Cold. */
bool prof_stacks_image(struct prof_stacks *p, const char *path, const uint8_t **bytes,
		       size_t *len);

/* Processes of a recording of ARCH. Cold. */
int prof_stacks_new(enum bk_arch arch, struct prof_stacks **out);
/* The clock of the recording's times (perf_event_attr.clockid when
 * use_clockid, else -1): a JIT's jitdump is followed in time when it is
 * the jitdump's. */
void prof_stacks_set_clock(struct prof_stacks *p, int32_t clockid);
void prof_stacks_free(struct prof_stacks *p);
/* A record that changes the processes (MMAP, COMM, FORK, EXIT) or says
 * which file perf saw (BUILD_ID: a HEADER_BUILD_ID record of a stream);
 * others are ignored. 0 or BK_E_NOMEM (BK_E_INVAL: an empty mapping). */
int prof_stacks_event(struct prof_stacks *p, const struct prof_record *rec);
/* The user stack of sample REC, innermost first (its interrupted PC, then
 * the return addresses), at most MAX: how many, or a BK_E_* code.
 * INTERRUPTED (may be NULL): per PC, 1 where the frame was interrupted
 * (the sample's own, one under a signal frame) or is the sigreturn
 * trampoline (the handler returned there; nothing called it): name it
 * at its PC; 0 for a return address (name it at PC - 1). *W says which
 * space the PCs belong to and whether the walk reached the end. */
int prof_stacks_walk(struct prof_stacks *p, const struct prof_record *rec, uint64_t *pcs,
		     uint8_t *interrupted, int max, struct prof_walk *w);
const struct prof_stack_stats *prof_stacks_stats(const struct prof_stacks *p);
/* The I-th file whose build-id differs from the one perf recorded (its
 * mappings are not used; a walk ends at a frame there, reason "build-id
 * differs"), in the order found, each once; NULL past the end. */
const char *prof_stacks_differing(const struct prof_stacks *p, size_t i);


/* Records in time order (prof_stack.c, "Time order"): push every record
 * that matters (samples, MMAP, COMM, FORK, EXIT); at each FINISHED_ROUND
 * (END false) or at the end (END true) prof_queue_round says how many are
 * final, prof_queue_get decodes the I-th of them (its pointers valid until
 * the next call), prof_queue_drop_ready forgets them. A record read from
 * memory (prof_open_memory) is kept as a pointer into it, others as a
 * copy. prof_queue_get gives an MMAP record that carries no build-id
 * (mmap.build_id_len 0; PROF_MISC_MMAP_BUILD_ID unset) the one the
 * recording's HEADER_BUILD_ID names for its file on the host, if any. */
struct prof_queue;
int prof_queue_new(struct prof_queue **out);
void prof_queue_free(struct prof_queue *q);
int prof_queue_push(struct prof_queue *q, const struct prof_reader *r,
		    const struct prof_record *rec);
size_t prof_queue_round(struct prof_queue *q, bool end);
int prof_queue_get(struct prof_queue *q, struct prof_reader *r, size_t i,
		   struct prof_record *rec);
void prof_queue_drop_ready(struct prof_queue *q);
#endif
