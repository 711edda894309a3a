/* One output module for every command that prints stacks (pid, core, run;
 * report, record): a stack is a list of machine frames, each
 * with the source-level frames at its PC (inlined calls first, then the
 * function that contains them); a printer per format turns stacks into
 * text. Printers write through out.h. */
#ifndef BK_FRAMES_H
#define BK_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backstep.h"

/* One machine frame, symbolized. */
struct fr_frame {
	uint64_t pc;
	enum bk_frame_how how;
	const char *module;           /* path, or NULL when no module holds the PC */
	uint64_t module_off;          /* pc - the module's start */
	const struct bk_symbol *syms; /* innermost first: inlined calls, then the function */
	int nsym;                     /* 0: nothing known */
	const struct bk_regs *regs;   /* the recovered registers (-r), or NULL */
	/* Nonzero: every frame with this key has the same pc, how, module
	 * and symbols, so a printer may keep the text it made for one and
	 * print it again (report numbers the distinct frames of a recording
	 * this way). Keys are small: printers index arrays with them. */
	uint32_t key;
};

/* One stack: a thread of a stopped process or core, or a sample. */
struct fr_stack {
	int pid, tid;
	const char *name;             /* the thread's name (comm) */
	/* A sample's (report, record): */
	uint64_t time;                /* ns */
	uint32_t cpu;
	uint64_t period;
	const char *event;
	const struct fr_frame *f;     /* innermost first */
	size_t n;
	int no_regs;                  /* BK_E_*: the thread's registers were unknown, else 0 */
	bool began;                   /* the walk began (else ERROR says why not) */
	int error;                    /* BK_E_*: the walk ended on this error, else 0 */
	/* The signal this thread received and that ended the process (a
	 * core's, run's), or NULL: printed with the thread, which comes first. */
	const struct bk_signal_info *signal;
};

/* SIGNO's name ("SIGSEGV"; "signal N" when it has none) and CODE (si_code)
 * in words: its name and what it means ("SEGV_MAPERR", "address not mapped
 * to object"); NULL, NULL when unknown. */
const char *fr_signal_name(int signo, char *buf, size_t len);
void fr_signal_code(int signo, int code, const char **name, const char **words);

/* A format: called as begin, stack for each stack, end. */
struct fr_printer {
	const char *name;
	void (*begin)(void);
	void (*stack)(const struct fr_stack *s, size_t index);
	void (*end)(void);
};

/* "text" (gdb-like, a header per thread) and "json" (an array of thread
 * objects), as `backstep pid` prints them; for samples "perf-script" (the
 * text `perf script` prints), "folded" (one line per distinct stack, root
 * first, and its count: flamegraph.pl's input) and "jsonl" (one sample per
 * line, the frame objects of "json"). */
extern const struct fr_printer fr_text, fr_json, fr_perf_script, fr_folded, fr_jsonl;
/* "speedscope": speedscope's JSON file format, a sampled profile per
 * thread (https://www.speedscope.app/file-format-schema.json). */
extern const struct fr_printer fr_speedscope;
/* "svg": a flame graph in one self-contained SVG file with its script:
 * hover, click to zoom, search (tools/flame.c). */
extern const struct fr_printer fr_svg;
/* The sample printer a --format NAME names ("json" is JSON Lines for
 * samples), or NULL; FR_SAMPLE_FORMATS lists the names for messages. */
const struct fr_printer *fr_sample_printer(const char *name);
#define FR_SAMPLE_FORMATS "perf-script|folded|json|speedscope|svg"
/* The sample printers' options: inlined calls as frames of their own
 * (set before the first stack). */
void fr_set_inline(bool on);
/* Architecture of the registers printed under frames by fr_text. */
void fr_set_arch(enum bk_arch arch);

/* The distinct stacks of the samples so far, shared by the folded and svg
 * printers (frames.c, fold.h): fr_fold adds one sample's stack (its
 * process's name, then its frames' names, root first, as --no-inline
 * says), fr_fold_table is the table (NULL before the first stack),
 * fr_fold_reset frees it (and says on stderr if stacks were lost). */
struct fold;
void fr_fold(const struct fr_stack *s);
struct fold *fr_fold_table(void);
void fr_fold_reset(void);

/* A JSON string literal of S (quotes, escapes). */
void fr_json_str(const char *s);

#endif
