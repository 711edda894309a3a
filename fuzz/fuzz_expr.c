/* Fuzz harness: the DWARF expression VM, decoder and printer (src/expr).
 *
 * Input: two header bytes, then the expression bytes.
 *   byte 0  flags: bit 0  addr_size 4 (else 8)
 *                  bit 1  push an initial value (as DW_CFA_expression does)
 *                  bit 2  no read_reg callback
 *                  bit 3  no memory callback
 *                  bits 4-5  register names for expr_format: none, x86_64, aarch64
 *   byte 1  seed: shifts register values, memory contents and the initial value
 *
 * Registers: even numbers below 64 point into a 512-byte fake memory, odd
 * ones hold arbitrary 64-bit patterns, every 13th fails with BK_E_BAD_REG
 * and numbers from 64 up are unknown. Memory reads outside the fake memory
 * fail with BK_E_MEMORY. The expression is the tail of libFuzzer's buffer,
 * so a read past its end is an ASan report.
 *
 * abort() marks a broken documented invariant rather than a crash: a result
 * wider than addr_size, two evaluations of the same input disagreeing, a
 * memory read of 0 or more than 8 bytes, expr_format writing an unterminated
 * or inconsistent text, expr_decode_op moving the reader on error or
 * reporting a length that is not what it consumed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr/expr.h"

#define MEM_BASE 0x7ffe1000u
#define MEM_LEN 512u
#define FORMAT_SMALL 64
#define FORMAT_LARGE 65536

struct fake {
	uint8_t seed;
	uint8_t mem[MEM_LEN];
};

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_expr: invariant broken: %s\n", what);
		abort();
	}
}

static int read_reg(void *ctx, unsigned regno, uint64_t *value)
{
	const struct fake *f = ctx;
	if (regno >= 64 || regno % 13 == 12)
		return BK_E_BAD_REG;
	if (regno % 2 == 0)
		*value = MEM_BASE + (regno * 8u + f->seed) % MEM_LEN;
	else
		*value = (regno * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)f->seed << 56);
	return 0;
}

static int read_mem(void *ctx, uint64_t addr, void *dst, size_t len)
{
	const struct fake *f = ctx;
	/* The VM reads 1..addr_size bytes into an 8-byte buffer. */
	check(len >= 1 && len <= 8, "memory read of 0 or more than 8 bytes");
	if (addr < MEM_BASE || addr - MEM_BASE > MEM_LEN || len > MEM_LEN - (addr - MEM_BASE))
		return BK_E_MEMORY;
	memcpy(dst, f->mem + (addr - MEM_BASE), len);
	return 0;
}

/* Every operation boundary: decode, check what the decoder promises, and
 * after an error resynchronise one byte later to reach more opcodes. */
static void decode_all(const uint8_t *ops, size_t len, uint8_t addr_size)
{
	size_t pos = 0;
	while (pos < len) {
		struct buf b = buf_make(ops + pos, len - pos);
		struct expr_op op;
		int err = expr_decode_op(&b, pos, addr_size, &op);
		if (err) {
			check(b.p == ops + pos, "expr_decode_op moved the reader on error");
			check(err < 0, "expr_decode_op error is not negative");
			pos++;
			continue;
		}
		check(op.off == pos, "expr_op.off");
		check(op.len >= 1 && op.len <= len - pos, "expr_op.len out of range");
		check(b.p == ops + pos + op.len, "expr_op.len is not what was consumed");
		check(op.nargs <= 2, "expr_op.nargs");
		check(expr_op_name(op.opcode) != NULL, "decoded an opcode without a name");
		if (op.block)
			check(op.block >= ops + pos && op.block_len <= (size_t)(b.p - op.block),
			      "expr_op.block outside the operation");
		pos += op.len;
	}
}

static char large_out[FORMAT_LARGE];

static void format_all(const uint8_t *ops, size_t len, uint8_t addr_size,
		       const struct arch_info *arch)
{
	char small_out[FORMAT_SMALL], tiny_out[1];
	int rl = expr_format(ops, len, addr_size, arch, large_out, sizeof(large_out));
	int rs = expr_format(ops, len, addr_size, arch, small_out, sizeof(small_out));
	int rt = expr_format(ops, len, addr_size, arch, tiny_out, sizeof(tiny_out));

	check(memchr(large_out, 0, sizeof(large_out)) != NULL, "large text not terminated");
	check(memchr(small_out, 0, sizeof(small_out)) != NULL, "small text not terminated");
	check(tiny_out[0] == 0, "1-byte buffer holds text");
	check(len == 0 ? rt == 0 : rt != 0, "1-byte buffer: return code");

	size_t nl = strlen(large_out), ns = strlen(small_out);
	if (nl == sizeof(large_out) - 1)
		return; /* the large buffer was cut as well: nothing to compare */
	if (nl < sizeof(small_out)) {
		check(rs == rl && strcmp(small_out, large_out) == 0,
		      "text that fits differs between buffer sizes");
	} else {
		/* Cut: the same prefix, then "...", and BK_E_LIMIT unless the
		 * cut fell in the error message of a decoding error. */
		check(ns == sizeof(small_out) - 1, "cut text does not fill the buffer");
		check(memcmp(small_out, large_out, ns - 3) == 0, "cut text is not a prefix");
		check(memcmp(small_out + ns - 3, "...", 3) == 0, "cut text does not end in ...");
		check(rs == BK_E_LIMIT || rs == rl, "cut text: return code");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t flags = data[0];
	struct fake f = { .seed = data[1] };
	const uint8_t *ops = data + 2;
	size_t len = size - 2;
	uint8_t addr_size = (flags & 1) ? 4 : 8;

	for (unsigned i = 0; i < MEM_LEN; i += 8) {
		uint64_t w = MEM_BASE + (i * 3u + f.seed * 8u) % MEM_LEN;
		if (i % 64 == 56)
			w = ~w; /* some words that point nowhere */
		for (unsigned k = 0; k < 8; k++)
			f.mem[i + k] = (uint8_t)(w >> (8 * k));
	}

	struct expr_env env = {
		.addr_size = addr_size,
		.read_reg = (flags & 4) ? NULL : read_reg,
		.reg_ctx = &f,
		.mem = { (flags & 8) ? NULL : read_mem, &f },
	};
	uint64_t initial = MEM_BASE + (f.seed % (MEM_LEN / 8)) * 8u;
	const uint64_t *init = (flags & 2) ? &initial : NULL;

	uint64_t r1 = 0, r2 = 0;
	int e1 = expr_eval(ops, len, &env, init, &r1);
	int e2 = expr_eval(ops, len, &env, init, &r2);
	check(e1 <= 0, "expr_eval returned a positive value");
	check(e1 == e2 && (e1 || r1 == r2), "two evaluations of one input differ");
	if (e1 == 0 && addr_size == 4)
		check(r1 <= UINT32_MAX, "32-bit result carries high bits");
	if (len == 0 && !init)
		check(e1 == BK_E_CORRUPT, "empty expression has a value");

	decode_all(ops, len, addr_size);
	/* The decoder also takes address sizes the VM does not (1..8). */
	decode_all(ops, len, (uint8_t)(1 + f.seed % 8));

	static const enum bk_arch archs[4] = { BK_ARCH_UNKNOWN, BK_ARCH_X86_64, BK_ARCH_AARCH64,
					       BK_ARCH_UNKNOWN };
	const struct arch_info *arch = arch_get(archs[(flags >> 4) & 3]);
	format_all(ops, len, addr_size, arch);
	return 0;
}
