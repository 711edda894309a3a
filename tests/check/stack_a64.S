/* check --stack fixture for AArch64 (tests/check/stack_a64.py): each
 * lie_* function's CFI lies in one way, and each instruction a lie covers
 * is marked M_<function>_<k>: the analysis must report a difference there
 * and nowhere else. The ok_* functions are right and must be checked in
 * full: frames on sp and on x29, callee-saved x19-x28 and d8-d15, large
 * and run-time frames, pointer authentication, tail calls, jump tables in
 * the shapes gcc and clang emit. part_ijump jumps through a register no
 * table explains; _start is the outermost frame.
 * Built -nostdlib -static; never run. */
	.arch	armv8.3-a
	.text
	.p2align 2

	.globl	_start
	.type	_start, %function
_start:
	.cfi_startproc
	.cfi_undefined 30
	mov	x29, #0
	bl	ok_frame
	b	_start
	.cfi_endproc
	.size	_start, .-_start

	.globl	helper
	.type	helper, %function
helper:
	.cfi_startproc
	add	x0, x0, #1
	ret
	.cfi_endproc
	.size	helper, .-helper

/* ---- lies ---------------------------------------------------------- */

	/* The CFA not moved after `stp x29, x30, [sp, #-16]!`. */
	.globl	lie_stp_cfa
	.type	lie_stp_cfa, %function
lie_stp_cfa:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_offset 29, -16		/* WRONG: no .cfi_def_cfa_offset 16 */
	.cfi_offset 30, -8
M_lie_stp_cfa_1:
	mov	x29, sp
M_lie_stp_cfa_2:
	bl	helper
M_lie_stp_cfa_3:
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	ret
	.cfi_endproc
	.size	lie_stp_cfa, .-lie_stp_cfa

	/* x19 stored at CFA-16, recorded at CFA-8. */
	.globl	lie_save_slot
	.type	lie_save_slot, %function
lie_save_slot:
	.cfi_startproc
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	str	x19, [sp, #16]
	.cfi_offset 19, -8		/* WRONG: it is at CFA-16 */
M_lie_save_slot_1:
	mov	x19, x0
M_lie_save_slot_2:
	bl	helper
M_lie_save_slot_3:
	add	x0, x0, x19
M_lie_save_slot_4:
	ldr	x19, [sp, #16]
	.cfi_restore 19
	ldp	x29, x30, [sp], #32
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	lie_save_slot, .-lie_save_slot

	/* The CFA not restored after `ldp x29, x30, [sp], #16`. */
	.globl	lie_ldp_cfa
	.type	lie_ldp_cfa, %function
lie_ldp_cfa:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov	x29, sp
	bl	helper
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29			/* WRONG: no .cfi_def_cfa_offset 0 */
M_lie_ldp_cfa_1:
	ret
	.cfi_endproc
	.size	lie_ldp_cfa, .-lie_ldp_cfa

	/* paciasp without .cfi_negate_ra_state: every row until autiasp
	 * says the return address is not signed. */
	.globl	lie_pac
	.type	lie_pac, %function
lie_pac:
	.cfi_startproc
	paciasp				/* WRONG: no .cfi_negate_ra_state */
M_lie_pac_1:
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
M_lie_pac_2:
	mov	x29, sp
M_lie_pac_3:
	bl	helper
M_lie_pac_4:
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
M_lie_pac_5:
	autiasp
	ret
	.cfi_endproc
	.size	lie_pac, .-lie_pac

	/* autiasp without .cfi_negate_ra_state: the ret's row says signed. */
	.globl	lie_aut
	.type	lie_aut, %function
lie_aut:
	.cfi_startproc
	hint	#25			/* paciasp, as gcc spells it for v8.0 */
	.cfi_negate_ra_state
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	bl	helper
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	hint	#29			/* autiasp; WRONG: no .cfi_negate_ra_state */
M_lie_aut_1:
	ret
	.cfi_endproc
	.size	lie_aut, .-lie_aut

	/* paciasp (sp the only modifier) under a row that says the PC is
	 * one too (DW_CFA_AARCH64_negate_ra_state_with_pc, 0x2c): the
	 * unwinder would authenticate with the wrong modifiers. */
	.globl	lie_pac_pc
	.type	lie_pac_pc, %function
lie_pac_pc:
	.cfi_startproc
	paciasp
	.cfi_escape 0x2c		/* WRONG: paciasp does not use the PC */
M_lie_pac_pc_1:
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
M_lie_pac_pc_2:
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
M_lie_pac_pc_3:
	autiasp
	.cfi_escape 0x2c
	ret
	.cfi_endproc
	.size	lie_pac_pc, .-lie_pac_pc

	/* .cfi_restore_state one row late: the first instruction after the
	 * label still has the first epilogue's row. */
	.globl	lie_remember
	.type	lie_remember, %function
lie_remember:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	cbz	x0, 1f
	.cfi_remember_state
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
1:
M_lie_remember_1:
	mov	x0, #1
	.cfi_restore_state		/* WRONG: one instruction late */
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	lie_remember, .-lie_remember

	/* A jump table (gcc's shape: byte entries, signed, from the label
	 * after the br); one case has a wrong row, reached only through the
	 * table. */
	.globl	lie_switch
	.type	lie_switch, %function
lie_switch:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	cmp	w0, #3
	b.hi	9f
	adrp	x1, .Ltab_lie
	add	x1, x1, :lo12:.Ltab_lie
	ldrb	w1, [x1, w0, uxtw]
	adr	x2, .Lrtx_lie
	add	x1, x2, w1, sxtb #2
	br	x1
.Lrtx_lie:
0:	mov	x0, #10
	b	8f
1:	mov	x0, #11
	b	8f
2:	.cfi_def_cfa_offset 32		/* WRONG, for this case only */
M_lie_switch_1:
	mov	x0, #12
	.cfi_def_cfa_offset 16
	b	8f
3:	mov	x0, #13
	b	8f
9:	mov	x0, #0
8:	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	lie_switch, .-lie_switch
	.section .rodata
.Ltab_lie:
	.byte	(0b - .Lrtx_lie) / 4
	.byte	(1b - .Lrtx_lie) / 4
	.byte	(2b - .Lrtx_lie) / 4
	.byte	(3b - .Lrtx_lie) / 4
	.text

/* ---- correct shapes ------------------------------------------------ */

	/* A frame record, x19/x20 saved below it. */
	.globl	ok_frame
	.type	ok_frame, %function
ok_frame:
	.cfi_startproc
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov	x29, sp
	stp	x19, x20, [sp, #16]
	.cfi_offset 19, -16
	.cfi_offset 20, -8
	mov	x19, x0
	bl	helper
	mov	x20, x0
	add	x0, x19, x20
	ldp	x19, x20, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_restore 30
	.cfi_restore 29
	.cfi_restore 19
	.cfi_restore 20
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	ok_frame, .-ok_frame

	/* Every callee-saved register, a page-sized frame below them. */
	.globl	ok_callee
	.type	ok_callee, %function
ok_callee:
	.cfi_startproc
	stp	x29, x30, [sp, #-160]!
	.cfi_def_cfa_offset 160
	.cfi_offset 29, -160
	.cfi_offset 30, -152
	mov	x29, sp
	.cfi_def_cfa_register 29
	stp	x19, x20, [sp, #16]
	stp	x21, x22, [sp, #32]
	stp	x23, x24, [sp, #48]
	stp	x25, x26, [sp, #64]
	stp	x27, x28, [sp, #80]
	.cfi_offset 19, -144
	.cfi_offset 20, -136
	.cfi_offset 21, -128
	.cfi_offset 22, -120
	.cfi_offset 23, -112
	.cfi_offset 24, -104
	.cfi_offset 25, -96
	.cfi_offset 26, -88
	.cfi_offset 27, -80
	.cfi_offset 28, -72
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	.cfi_offset 72, -64
	.cfi_offset 73, -56
	.cfi_offset 74, -48
	.cfi_offset 75, -40
	.cfi_offset 76, -32
	.cfi_offset 77, -24
	.cfi_offset 78, -16
	.cfi_offset 79, -8
	sub	sp, sp, #1, lsl #12
	sub	sp, sp, #32
	mov	x19, #1
	mov	x28, x0
	fmov	d8, x0
	fmov	d15, x19
	str	x0, [sp, #8]
	bl	helper
	add	sp, sp, #1, lsl #12
	add	sp, sp, #32
	ldp	d14, d15, [sp, #144]
	ldp	d12, d13, [sp, #128]
	ldp	d10, d11, [sp, #112]
	ldp	d8, d9, [sp, #96]
	ldp	x27, x28, [sp, #80]
	ldp	x25, x26, [sp, #64]
	ldp	x23, x24, [sp, #48]
	ldp	x21, x22, [sp, #32]
	ldp	x19, x20, [sp, #16]
	ldp	x29, x30, [sp], #160
	.cfi_restore 30
	.cfi_restore 29
	.cfi_restore 19
	.cfi_restore 20
	.cfi_restore 21
	.cfi_restore 22
	.cfi_restore 23
	.cfi_restore 24
	.cfi_restore 25
	.cfi_restore 26
	.cfi_restore 27
	.cfi_restore 28
	.cfi_restore 72
	.cfi_restore 73
	.cfi_restore 74
	.cfi_restore 75
	.cfi_restore 76
	.cfi_restore 77
	.cfi_restore 78
	.cfi_restore 79
	.cfi_def_cfa 31, 0
	ret
	.cfi_endproc
	.size	ok_callee, .-ok_callee

	/* alloca: sp moved by a run-time amount, the CFA on x29. */
	.globl	ok_alloca
	.type	ok_alloca, %function
ok_alloca:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov	x29, sp
	.cfi_def_cfa_register 29
	add	x0, x0, #15
	and	x0, x0, #-16
	sub	sp, sp, x0
	mov	x0, sp
	bl	helper
	mov	sp, x29
	.cfi_def_cfa_register 31
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	ok_alloca, .-ok_alloca

	/* Pointer authentication, as gcc -mbranch-protection=standard emits
	 * it (bti c, paciasp, autiasp), and with the B key and retab. */
	.globl	ok_pac
	.type	ok_pac, %function
ok_pac:
	.cfi_startproc
	hint	#34			/* bti c */
	paciasp
	.cfi_negate_ra_state
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov	x29, sp
	bl	helper
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	autiasp
	.cfi_negate_ra_state
	ret
	.cfi_endproc
	.size	ok_pac, .-ok_pac

	.globl	ok_pac_b
	.type	ok_pac_b, %function
ok_pac_b:
	.cfi_startproc
	.cfi_b_key_frame
	pacibsp
	.cfi_negate_ra_state
	str	x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 30, -16
	bl	helper
	ldr	x30, [sp], #16
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	retab
	.cfi_endproc
	.size	ok_pac_b, .-ok_pac_b

	/* A tail call after the epilogue. */
	.globl	ok_tail
	.type	ok_tail, %function
ok_tail:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	bl	helper
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	b	helper
	.cfi_endproc
	.size	ok_tail, .-ok_tail

	/* Jump tables: clang's (unsigned byte entries from the first case,
	 * lsl #2) and word entries relative to the table (ldrsw + add). */
	.globl	ok_switch_clang
	.type	ok_switch_clang, %function
ok_switch_clang:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov	w8, w0
	cmp	x8, #2
	b.hi	9f
	adrp	x9, .Ltab_clang
	add	x9, x9, :lo12:.Ltab_clang
	adr	x10, 0f
	ldrb	w11, [x9, x8]
	add	x10, x10, x11, lsl #2
	br	x10
0:	mov	x0, #1
	b	8f
1:	bl	helper
	b	8f
2:	mov	x0, #3
	b	8f
9:	mov	x0, #0
8:	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	ok_switch_clang, .-ok_switch_clang
	.section .rodata
.Ltab_clang:
	.byte	(0b - 0b) / 4
	.byte	(1b - 0b) / 4
	.byte	(2b - 0b) / 4
	.text

	.globl	ok_switch_word
	.type	ok_switch_word, %function
ok_switch_word:
	.cfi_startproc
	sub	sp, sp, #32
	.cfi_def_cfa_offset 32
	stp	x29, x30, [sp, #16]
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	cmp	w0, #2
	b.ls	7f
	mov	x0, #0
	b	8f
7:	adrp	x9, .Ltab_word
	add	x9, x9, :lo12:.Ltab_word
	ldrsw	x11, [x9, w0, uxtw #2]
	add	x10, x9, x11
	br	x10
0:	mov	x0, #1
	b	8f
1:	bl	helper
	b	8f
2:	mov	x0, #3
8:	ldp	x29, x30, [sp, #16]
	.cfi_restore 30
	.cfi_restore 29
	add	sp, sp, #32
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	ok_switch_word, .-ok_switch_word
	.section .rodata
	.p2align 2
.Ltab_word:
	.word	0b - .Ltab_word
	.word	1b - .Ltab_word
	.word	2b - .Ltab_word
	.text

	/* The callee-saved registers through a frame the CFA follows on
	 * x29 while sp moves (pre- and post-indexed), and a landing of a
	 * conditional branch with the same frame from two paths. */
	.globl	ok_join
	.type	ok_join, %function
ok_join:
	.cfi_startproc
	stp	x29, x30, [sp, #-48]!
	.cfi_def_cfa_offset 48
	.cfi_offset 29, -48
	.cfi_offset 30, -40
	add	x29, sp, #0
	.cfi_def_cfa_register 29
	str	x21, [sp, #16]
	.cfi_offset 21, -32
	cbz	x0, 1f
	mov	x21, x0
	str	x1, [sp, #-16]!
	bl	helper
	ldr	x1, [sp], #16
	add	x0, x0, x21
1:	ldr	x21, [sp, #16]
	.cfi_restore 21
	ldp	x29, x30, [sp], #48
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa 31, 0
	ret
	.cfi_endproc
	.size	ok_join, .-ok_join

	/* Vector stores below the frame record: st2 of two q registers
	 * writes 32 bytes, not the record 48 bytes up (an upper bound of 64
	 * had made x29 and x30 "lost" there). */
	.globl	ok_vector_store
	.type	ok_vector_store, %function
ok_vector_store:
	.cfi_startproc
	sub	sp, sp, #64
	.cfi_def_cfa_offset 64
	stp	x29, x30, [sp, #48]
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	add	x29, sp, #48
	mov	x3, sp
	st2	{v0.16b, v1.16b}, [x3]
	st1	{v2.16b}, [x3], #16
	bl	helper
	ldp	x29, x30, [sp, #48]
	.cfi_restore 30
	.cfi_restore 29
	add	sp, sp, #64
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	ok_vector_store, .-ok_vector_store

/* ---- shapes not checked in full ------------------------------------ */

	/* An indirect jump no compare bounds: what only it reaches is not
	 * reached. */
	.globl	part_ijump
	.type	part_ijump, %function
part_ijump:
	.cfi_startproc
	br	x0
	mov	x0, #1
	ret
	.cfi_endproc
	.size	part_ijump, .-part_ijump

	/* q8, q9 saved and restored whole (ld.so's _dl_tlsdesc_dynamic
	 * does so with q0-q31): d8 and d9 are their low halves, at the
	 * lower addresses. */
	.globl	ok_qsave
	.type	ok_qsave, %function
ok_qsave:
	.cfi_startproc
	stp	q8, q9, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 72, -32
	.cfi_offset 73, -16
	fmov	d8, x0
	fmov	d9, x1
	ldp	q8, q9, [sp], #32
	.cfi_restore 72
	.cfi_restore 73
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	ok_qsave, .-ok_qsave

	.section .note.GNU-stack,"",%progbits
