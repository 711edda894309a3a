/* From sample records to printed stacks, for report (records from a
 * perf.data file) and record (records from perf_event_open's ring
 * buffers): records are put in time order, each process's modules
 * followed, each sample's user stack walked (src/profile), its frames
 * named once per distinct frame and handed to a printer (frames.h). */
#ifndef BK_SAMPLES_H
#define BK_SAMPLES_H

#include <stdbool.h>
#include <stdio.h>

#include "frames.h"

#include "../src/profile/prof.h"

struct smp_opts {
	const struct fr_printer *pr;
	int pid, tid;              /* only these (0: all) */
	const char *comm;          /* only processes of this name (NULL: all) */
	bool no_symbols;           /* -n: modules and offsets only */
	bool kernel;               /* kernel frames from the callchain on top */
};

struct smp;

/* Samples of ARCH's processes, printed with O->pr (whose begin is called
 * here). O must outlive the result. KERNEL_CALLCHAINS: samples will have
 * kernel frames (prepare their names now). 0 or BK_E_NOMEM. */
int smp_new(enum bk_arch arch, const struct smp_opts *o, bool kernel_callchains,
	    struct smp **out);
/* Whether R's events sample kernel callchains. */
bool smp_kernel_callchains(const struct prof_reader *r);
/* A record as read from R: samples and process changes are queued, a
 * FINISHED_ROUND releases the records it makes final, LOST is counted,
 * others are ignored. 0 or a BK_E_* code (final). */
int smp_feed(struct smp *s, struct prof_reader *r, const struct prof_record *rec);
/* The end: the queued records, then the printer's end. 0 or BK_E_*. */
int smp_finish(struct smp *s, struct prof_reader *r);
/* One line on F: samples read, walked to the end, truncated by reason,
 * skipped, lost. */
void smp_summary(const struct smp *s, FILE *f, const char *who);
void smp_free(struct smp *s);

#endif
