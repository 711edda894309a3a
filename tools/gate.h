/* Waived findings of `backstep check` (gate.c): --suppress and --baseline. */
#ifndef BK_GATE_H
#define BK_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gate_why { GATE_NONE = 0, GATE_BASELINE, GATE_SUPPRESSED };

/* --suppress KIND[:SYMBOL] (ARG is kept and cut at the ':'): 0, -1 too
 * many, -2 KIND_OK refused the kind. */
int gate_suppress(char *arg, bool (*kind_ok)(const char *kind));
/* --baseline PATH: 0, or -1 with WHY (one line, no file name). */
int gate_load_baseline(const char *path, char *why, size_t whylen);
/* Whether a finding (FILE as printed, KIND's name, SYMBOL or NULL at
 * SYM_OFF, DETAIL) is waived, and why. */
enum gate_why gate_check(const char *file, const char *kind, const char *symbol, uint64_t sym_off,
			 const char *detail);
bool gate_active(void);
void gate_free(void);
/* "baseline", "suppressed". */
const char *gate_why_name(enum gate_why why);

#endif
