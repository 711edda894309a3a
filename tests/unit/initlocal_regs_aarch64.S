/* il_init_known(struct bk_cursor *c, struct bk_space *s, struct il_out *out,
 *               void (*check)(struct bk_cursor *c, struct il_out *out)),
 * AArch64: records its caller's callee-saved registers and return address
 * in OUT, loads known values (0x0123456789abcd00 + the DWARF number) into
 * x19-x29 and d8-d15, calls bk_cursor_init_local(c, s) with them in place,
 * stores its result in OUT, calls CHECK(c, out) while this frame is still
 * alive, restores everything and returns. Frame 0 of the cursor is this
 * function at the return from that call: there its registers are the
 * known values; frame 1 is the caller, whose registers are the ones
 * recorded on entry.
 *
 * struct il_out { int64 rc; uint64 ra; uint64 entry[19]; } with entry[] in
 * the order x19..x29, d8..d15. x29 is an ordinary register here (the CFA
 * is sp-based), so the caller's x29 must come back from its save slot.
 * The return address is never signed here, whatever the C code does. */
	.text
	.p2align 2
	.globl	il_init_known
	.type	il_init_known, %function
il_init_known:
	.cfi_startproc
	hint	34			/* bti c */
	str	x30, [x2, #8]
	stp	x19, x20, [x2, #16]
	stp	x21, x22, [x2, #32]
	stp	x23, x24, [x2, #48]
	stp	x25, x26, [x2, #64]
	stp	x27, x28, [x2, #80]
	str	x29, [x2, #96]
	stp	d8, d9, [x2, #104]
	stp	d10, d11, [x2, #120]
	stp	d12, d13, [x2, #136]
	stp	d14, d15, [x2, #152]
	stp	x29, x30, [sp, #-192]!
	.cfi_def_cfa_offset 192
	.cfi_offset 29, -192
	.cfi_offset 30, -184
	stp	x19, x20, [sp, #16]
	.cfi_offset 19, -176
	.cfi_offset 20, -168
	stp	x21, x22, [sp, #32]
	.cfi_offset 21, -160
	.cfi_offset 22, -152
	stp	x23, x24, [sp, #48]
	.cfi_offset 23, -144
	.cfi_offset 24, -136
	stp	x25, x26, [sp, #64]
	.cfi_offset 25, -128
	.cfi_offset 26, -120
	stp	x27, x28, [sp, #80]
	.cfi_offset 27, -112
	.cfi_offset 28, -104
	stp	d8, d9, [sp, #96]
	.cfi_offset 72, -96
	.cfi_offset 73, -88
	stp	d10, d11, [sp, #112]
	.cfi_offset 74, -80
	.cfi_offset 75, -72
	stp	d12, d13, [sp, #128]
	.cfi_offset 76, -64
	.cfi_offset 77, -56
	stp	d14, d15, [sp, #144]
	.cfi_offset 78, -48
	.cfi_offset 79, -40
	stp	x0, x2, [sp, #160]	/* c, out */
	str	x3, [sp, #176]		/* check */
	ldr	x19, =0x0123456789abcd13
	ldr	x20, =0x0123456789abcd14
	ldr	x21, =0x0123456789abcd15
	ldr	x22, =0x0123456789abcd16
	ldr	x23, =0x0123456789abcd17
	ldr	x24, =0x0123456789abcd18
	ldr	x25, =0x0123456789abcd19
	ldr	x26, =0x0123456789abcd1a
	ldr	x27, =0x0123456789abcd1b
	ldr	x28, =0x0123456789abcd1c
	ldr	x29, =0x0123456789abcd1d
	ldr	x9, =0x0123456789abcd48
	fmov	d8, x9
	ldr	x9, =0x0123456789abcd49
	fmov	d9, x9
	ldr	x9, =0x0123456789abcd4a
	fmov	d10, x9
	ldr	x9, =0x0123456789abcd4b
	fmov	d11, x9
	ldr	x9, =0x0123456789abcd4c
	fmov	d12, x9
	ldr	x9, =0x0123456789abcd4d
	fmov	d13, x9
	ldr	x9, =0x0123456789abcd4e
	fmov	d14, x9
	ldr	x9, =0x0123456789abcd4f
	fmov	d15, x9
	bl	bk_cursor_init_local
	.globl	il_after_call
il_after_call:
	ldr	x2, [sp, #168]
	sxtw	x9, w0
	str	x9, [x2]		/* out->rc */
	ldr	x0, [sp, #160]
	mov	x1, x2
	ldr	x3, [sp, #176]
	blr	x3
	ldp	x19, x20, [sp, #16]
	ldp	x21, x22, [sp, #32]
	ldp	x23, x24, [sp, #48]
	ldp	x25, x26, [sp, #64]
	ldp	x27, x28, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	ldp	x29, x30, [sp], #192
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.ltorg
	.size	il_init_known, .-il_init_known
	.section .note.GNU-stack, "", %progbits
