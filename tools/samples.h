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
	bool kernel_given;         /* --kernel or --no-kernel was said */
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

/* ---- Options report and record share ----------------------------------------
 * --format FMT, -o/--output FILE, --pid PID, --tid TID, --comm NAME,
 * --no-inline, -n/--no-symbols, --kernel, --no-kernel, --no-debuginfod:
 * SMP_LONG_OPTIONS goes
 * into a command's getopt_long table (its short letters, if any, are the
 * command's own), smp_option takes what getopt_long returned for them. */
enum { SMP_OPT_PID = 0x100, SMP_OPT_TID, SMP_OPT_NO_INLINE, SMP_OPT_KERNEL, SMP_OPT_NO_KERNEL,
       SMP_OPT_NO_DEBUGINFOD };
#define SMP_LONG_OPTIONS                                                                   \
	{ "format", required_argument, NULL, 'f' }, { "output", required_argument, NULL, 'o' }, \
	{ "pid", required_argument, NULL, SMP_OPT_PID },                                    \
	{ "tid", required_argument, NULL, SMP_OPT_TID },                                    \
	{ "comm", required_argument, NULL, 'c' },                                            \
	{ "no-inline", no_argument, NULL, SMP_OPT_NO_INLINE },                              \
	{ "no-symbols", no_argument, NULL, 'n' },                                            \
	{ "kernel", no_argument, NULL, SMP_OPT_KERNEL },                                    \
	{ "no-kernel", no_argument, NULL, SMP_OPT_NO_KERNEL },                              \
	{ "no-debuginfod", no_argument, NULL, SMP_OPT_NO_DEBUGINFOD }
/* Option CH with argument ARG into O (-o: *OUTPUT): 1 when CH is one of
 * them, 0 when not, -1 after printing why ARG is wrong. */
int smp_option(int ch, const char *arg, struct smp_opts *o, const char **output);

#endif
