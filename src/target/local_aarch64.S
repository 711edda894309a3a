/* This process's registers, AArch64 (AAPCS64): see tgt_local_capture and
 * tgt_local_strip_pac in target.h. Both functions are leaves that never
 * store or sign x30 and start with a BTI landing pad (bti c, a hint: a
 * no-op on CPUs without BTI), so the object is marked compatible with BTI
 * and return-address signing (the property note at the end): linking it
 * into a -mbranch-protection=standard program keeps that program's
 * marking. */

	.text
	.p2align 2
/* void tgt_local_capture(uint64_t out[41]): out[slot] for the AArch64
 * slots (arch.c: x0-x30, sp, pc, then d8-d15) as the caller has them right
 * after the return: x19-x29 and d8-d15 untouched here, sp unchanged (bl
 * pushes nothing), pc and x30 the return address (bl leaves it unsigned).
 * x0-x18 are not written. */
	.globl	tgt_local_capture
	.hidden	tgt_local_capture
	.type	tgt_local_capture, %function
tgt_local_capture:
	.cfi_startproc
	hint	34			/* bti c */
	stp	x19, x20, [x0, #8 * 19]
	stp	x21, x22, [x0, #8 * 21]
	stp	x23, x24, [x0, #8 * 23]
	stp	x25, x26, [x0, #8 * 25]
	stp	x27, x28, [x0, #8 * 27]
	stp	x29, x30, [x0, #8 * 29]
	mov	x1, sp
	stp	x1, x30, [x0, #8 * 31]	/* sp, pc */
	stp	d8, d9, [x0, #8 * 33]
	stp	d10, d11, [x0, #8 * 35]
	stp	d12, d13, [x0, #8 * 37]
	stp	d14, d15, [x0, #8 * 39]
	ret
	.cfi_endproc
	.size	tgt_local_capture, .-tgt_local_capture

/* uint64_t tgt_local_strip_pac(uint64_t ra): xpaclri strips the
 * pointer-authentication code from x30 the way this CPU and kernel set
 * the process up (its virtual address size, tagged addresses); where the
 * CPU has no PAuth it is a no-op, and nothing was signed either. */
	.globl	tgt_local_strip_pac
	.hidden	tgt_local_strip_pac
	.type	tgt_local_strip_pac, %function
tgt_local_strip_pac:
	.cfi_startproc
	hint	34			/* bti c */
	mov	x16, x30
	.cfi_register x30, x16
	mov	x30, x0
	hint	7			/* xpaclri */
	mov	x0, x30
	mov	x30, x16
	.cfi_restore x30
	ret
	.cfi_endproc
	.size	tgt_local_strip_pac, .-tgt_local_strip_pac

	.section .note.GNU-stack, "", %progbits

/* GNU_PROPERTY_AARCH64_FEATURE_1_AND: BTI (1) | PAC (2). */
	.section .note.gnu.property, "a"
	.p2align 3
	.long	4			/* n_namesz */
	.long	16			/* n_descsz */
	.long	5			/* NT_GNU_PROPERTY_TYPE_0 */
	.asciz	"GNU"
	.long	0xc0000000		/* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
	.long	4			/* pr_datasz */
	.long	3
	.long	0			/* padding to 8 */
