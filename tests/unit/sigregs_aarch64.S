/* sr_raise_known(struct sr_out *out, int sig), AArch64: records its
 * caller's return address and callee-saved registers in OUT, loads known
 * values (0x0123456789abcd00 + the DWARF number) into x19-x29 and d8-d15,
 * sends itself SIG with tgkill (raw system calls: nothing else runs, so
 * the signal interrupts this very function at sr_after_svc, with the
 * known values in place), restores everything and returns.
 *
 * struct sr_out { uint64 ra; uint64 entry[19]; } with entry[] in the
 * order x19..x29, d8..d15. x29 is an ordinary register here (the CFA is
 * sp-based). */
	.text
	.p2align 2
	.globl	sr_raise_known
	.type	sr_raise_known, %function
sr_raise_known:
	.cfi_startproc
	hint	34			/* bti c */
	str	x30, [x0]
	stp	x19, x20, [x0, #8]
	stp	x21, x22, [x0, #24]
	stp	x23, x24, [x0, #40]
	stp	x25, x26, [x0, #56]
	stp	x27, x28, [x0, #72]
	str	x29, [x0, #88]
	stp	d8, d9, [x0, #96]
	stp	d10, d11, [x0, #112]
	stp	d12, d13, [x0, #128]
	stp	d14, d15, [x0, #144]
	stp	x29, x30, [sp, #-176]!
	.cfi_def_cfa_offset 176
	.cfi_offset 29, -176
	.cfi_offset 30, -168
	stp	x19, x20, [sp, #16]
	.cfi_offset 19, -160
	.cfi_offset 20, -152
	stp	x21, x22, [sp, #32]
	.cfi_offset 21, -144
	.cfi_offset 22, -136
	stp	x23, x24, [sp, #48]
	.cfi_offset 23, -128
	.cfi_offset 24, -120
	stp	x25, x26, [sp, #64]
	.cfi_offset 25, -112
	.cfi_offset 26, -104
	stp	x27, x28, [sp, #80]
	.cfi_offset 27, -96
	.cfi_offset 28, -88
	stp	d8, d9, [sp, #96]
	.cfi_offset 72, -80
	.cfi_offset 73, -72
	stp	d10, d11, [sp, #112]
	.cfi_offset 74, -64
	.cfi_offset 75, -56
	stp	d12, d13, [sp, #128]
	.cfi_offset 76, -48
	.cfi_offset 77, -40
	stp	d14, d15, [sp, #144]
	.cfi_offset 78, -32
	.cfi_offset 79, -24
	stp	x0, x1, [sp, #160]	/* out, sig */
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
	mov	x8, #172		/* getpid */
	svc	#0
	mov	x9, x0
	mov	x8, #178		/* gettid */
	svc	#0
	mov	x1, x0
	mov	x0, x9
	ldr	x2, [sp, #168]
	mov	x8, #131		/* tgkill(pid, tid, sig) */
	svc	#0
	.globl	sr_after_svc
sr_after_svc:
	ldp	x19, x20, [sp, #16]
	ldp	x21, x22, [sp, #32]
	ldp	x23, x24, [sp, #48]
	ldp	x25, x26, [sp, #64]
	ldp	x27, x28, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	ldp	x29, x30, [sp], #176
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.ltorg
	.size	sr_raise_known, .-sr_raise_known
	.section .note.GNU-stack, "", %progbits
