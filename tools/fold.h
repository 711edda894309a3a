/* Distinct stacks and how many samples had each: what the folded and SVG
 * printers aggregate (frames.c). A stack is a list of names, root first
 * (the process's name, then a name per function, inlined calls after the
 * function they are inlined into); names are interned once and stacks are
 * kept as lists of name ids, so memory grows with distinct names and
 * stacks, never with samples. */
#ifndef BK_FOLD_H
#define BK_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fold;

struct fold *fold_new(void);
void fold_free(struct fold *f);
/* The id of the name TEXT (LEN bytes, no NUL needed), interned; UINT32_MAX
 * when memory ran out. */
uint32_t fold_name(struct fold *f, const char *text, size_t len);
const char *fold_name_text(const struct fold *f, uint32_t id, size_t *len);
/* COUNT more samples of the stack NAMES[0..N) (ids, root first). False
 * when memory ran out (the samples are lost; fold_failed says so). */
bool fold_add(struct fold *f, const uint32_t *names, size_t n, uint64_t count);
bool fold_failed(const struct fold *f);

/* The stacks sorted by their names' text, compared name by name, a
 * stack after its proper prefixes ("a;b" < "a;b;c" < "a;bc"): a flame
 * graph's order. Returns how many; *STACKS stays valid until the next
 * fold_add or fold_sorted. */
struct fold_stack {
	const uint32_t *names;
	uint32_t n;
	uint64_t count;
};
size_t fold_sorted(struct fold *f, const struct fold_stack **stacks);

#endif
