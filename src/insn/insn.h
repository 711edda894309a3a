/* src/insn: the disassembler. Capstone (the Debian libcapstone4 ABI these
 * headers describe) is loaded with dlopen on first use, so that nothing
 * links it and the commands that never decode do not pay for loading and
 * relocating it (~2 ms); only its headers are needed to build. One loader
 * for every user: the validator (src/validate) classifies the instructions
 * it steps, the static stack check (src/check, chk_stack*.c) reads every
 * instruction of every function.
 *
 * A decoder (struct insn_dec) is one Capstone handle with instruction
 * detail on and one instruction buffer: not shared between threads, each
 * decoded instruction valid until the next call on the same decoder.
 * Cold to open (allocates); decoding never allocates.
 */
#ifndef BK_INSN_H
#define BK_INSN_H

#include <capstone/capstone.h>

#include "../base/base.h"

struct insn_dec;

/* A decoder for ARCH (BK_ARCH_X86_64: 64-bit mode; BK_ARCH_AARCH64:
 * little-endian A64). BK_E_UNSUPPORTED when Capstone cannot be loaded
 * (insn_library names what was looked for) or lacks the architecture,
 * BK_E_NOMEM. */
BK_HIDDEN int insn_open(enum bk_arch arch, struct insn_dec **out);
BK_HIDDEN void insn_close(struct insn_dec *d);

/* The instruction in BYTES (LEN bytes readable) at address PC, with its
 * detail; NULL when it does not decode (or LEN is 0). The instruction
 * belongs to D and is overwritten by the next insn_decode or insn_text. */
BK_HIDDEN const cs_insn *insn_decode(struct insn_dec *d, const uint8_t *bytes, size_t len,
				     uint64_t pc);
/* Whether I (decoded by D) is in Capstone group GROUP (CS_GRP_CALL, ...). */
BK_HIDDEN bool insn_in_group(struct insn_dec *d, const cs_insn *i, uint8_t group);
/* Capstone's name of register REG ("rsp"), or "?". */
BK_HIDDEN const char *insn_reg_name(struct insn_dec *d, unsigned reg);
/* "mnemonic operands" of the instruction at PC into BUF (Intel syntax, as
 * Capstone prints it), or "(bad)". Always NUL-terminates BUF. */
BK_HIDDEN void insn_text(struct insn_dec *d, const uint8_t *bytes, size_t len, uint64_t pc,
			 char *buf, size_t buflen);
/* The library insn_open loads: "libcapstone.so.4" (then the development
 * link libcapstone.so). */
BK_HIDDEN const char *insn_library(void);

/* Capstone's functions from a library linked to the caller, used instead
 * of loading one; before the first insn_open. (The in-process
 * validator's preload library: a dlopen inside the program it checks
 * would allocate with the program's malloc.) */
struct insn_capstone {
	__typeof__(cs_open) *open;
	__typeof__(cs_option) *option;
	__typeof__(cs_malloc) *malloc;
	__typeof__(cs_free) *free;
	__typeof__(cs_close) *close;
	__typeof__(cs_disasm_iter) *disasm_iter;
	__typeof__(cs_insn_group) *insn_group;
	__typeof__(cs_reg_name) *reg_name;
};
BK_HIDDEN void insn_provide(const struct insn_capstone *fns);

#endif
