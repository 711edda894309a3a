/* Hand-written CFI for the differential test (AArch64).
 *
 * shape_asm_cfi is a real function whose CFI matches its code (with return
 * address signing). The cfi_zoo_* functions are never called: their CFI is a
 * catalogue of rules and opcodes (DW_CFA_* named in the comments) that all
 * three readers have to agree on. Code alignment is 4, data alignment -8.
 *
 * -DCFI_DEBUG_FRAME puts the CFI in .debug_frame, -DCFI_BOTH in both sections.
 */
#if defined(CFI_DEBUG_FRAME)
	.cfi_sections .debug_frame
#elif defined(CFI_BOTH)
	.cfi_sections .eh_frame, .debug_frame
#endif

	.text
	.globl	shape_asm_cfi
	.type	shape_asm_cfi, %function
	.p2align 2
shape_asm_cfi:
	.cfi_startproc
	hint	#25				/* paciasp */
	.cfi_negate_ra_state			/* DW_CFA_AARCH64_negate_ra_state */
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset x29, -32
	.cfi_offset x30, -24
	mov	x29, sp
	.cfi_def_cfa_register x29
	str	x19, [sp, #16]
	.cfi_offset x19, -16
	mov	x19, x0
	bl	opaque
	add	x0, x0, x19
	cbz	x19, 1f
	.cfi_remember_state
	ldr	x19, [sp, #16]
	.cfi_restore x19
	ldp	x29, x30, [sp], #32
	.cfi_def_cfa sp, 0
	.cfi_restore x29
	.cfi_restore x30
	hint	#29				/* autiasp */
	.cfi_negate_ra_state
	ret
1:
	.cfi_restore_state			/* signed again, CFA x29+32 */
	ldr	x19, [sp, #16]
	.cfi_restore x19
	ldp	x29, x30, [sp], #32
	.cfi_def_cfa sp, 0
	.cfi_restore x29
	.cfi_restore x30
	hint	#29
	.cfi_negate_ra_state
	ret
	.cfi_endproc
	.size	shape_asm_cfi, .-shape_asm_cfi

	.globl	cfi_zoo_rules
	.type	cfi_zoo_rules, %function
	.p2align 2
cfi_zoo_rules:
	.cfi_startproc
	nop
	.cfi_def_cfa_offset 16
	.cfi_offset x19, -16			/* DW_CFA_offset */
	.cfi_offset x20, 8			/* DW_CFA_offset_extended_sf */
	nop
	.cfi_same_value x21			/* DW_CFA_same_value */
	.cfi_undefined x22			/* DW_CFA_undefined */
	.cfi_register x30, x16			/* DW_CFA_register */
	/* DW_CFA_val_offset x23, 4 (factored: -32) */
	.cfi_escape 0x14, 0x17, 0x04
	nop
	.cfi_offset 72, -48			/* v8: DW_CFA_offset_extended */
	.cfi_offset 79, -56			/* v15 */
	.cfi_offset 127, -64			/* z31 */
	nop
	.cfi_restore 72				/* DW_CFA_restore_extended */
	.cfi_restore x19			/* DW_CFA_restore */
	nop
	.cfi_undefined x30			/* return address undefined */
	nop
	.cfi_endproc
	.size	cfi_zoo_rules, .-cfi_zoo_rules

/* Nested remember/restore, with the signing state inside. */
	.globl	cfi_zoo_state
	.type	cfi_zoo_state, %function
	.p2align 2
cfi_zoo_state:
	.cfi_startproc
	.cfi_negate_ra_state
	nop
	.cfi_def_cfa_offset 16
	.cfi_offset x19, -16
	.cfi_remember_state
	nop
	.cfi_negate_ra_state			/* unsigned */
	.cfi_def_cfa_offset 32
	.cfi_offset x20, -24
	.cfi_remember_state
	nop
	.cfi_negate_ra_state			/* signed */
	.cfi_def_cfa x29, 48
	.cfi_offset x21, -32
	.cfi_restore x19
	nop
	.cfi_restore_state			/* unsigned, cfa+32, x19, x20 */
	nop
	.cfi_restore_state			/* signed, cfa+16, x19 */
	nop
	.cfi_negate_ra_state
	.cfi_offset x22, -40
	nop
	.cfi_endproc
	.size	cfi_zoo_state, .-cfi_zoo_state

	.globl	cfi_zoo_escape
	.type	cfi_zoo_escape, %function
	.p2align 2
cfi_zoo_escape:
	.cfi_startproc
	nop
	/* DW_CFA_expression x19: DW_OP_breg31 (sp) +8 */
	.cfi_escape 0x10, 0x13, 0x02, 0x8f, 0x08
	/* DW_CFA_val_expression x20: DW_OP_breg31 +16; DW_OP_lit4; DW_OP_plus */
	.cfi_escape 0x16, 0x14, 0x04, 0x8f, 0x10, 0x34, 0x22
	nop
	/* DW_CFA_def_cfa_expression: DW_OP_breg29 (x29) -8; DW_OP_deref */
	.cfi_escape 0x0f, 0x03, 0x8d, 0x78, 0x06
	nop
	/* DW_CFA_def_cfa_sf sp, -2 (factored: 16) */
	.cfi_escape 0x12, 0x1f, 0x7e
	nop
	/* DW_CFA_def_cfa_offset_sf -3 (factored: 24) */
	.cfi_escape 0x13, 0x7d
	/* DW_CFA_val_offset_sf x21, 2 (factored: -16) */
	.cfi_escape 0x15, 0x15, 0x02
	nop
	/* DW_CFA_advance_loc 0 then a change at the same address */
	.cfi_escape 0x40
	.cfi_offset x22, -48
	nop
	.cfi_def_cfa sp, 8
	nop
	.cfi_endproc
	.size	cfi_zoo_escape, .-cfi_zoo_escape

	.globl	cfi_zoo_far
	.type	cfi_zoo_far, %function
	.p2align 2
cfi_zoo_far:
	.cfi_startproc
	nop
	.cfi_def_cfa_offset 100000
	.skip	400, 0
	.cfi_def_cfa_offset 16			/* advance_loc1 (factored 100) */
	.skip	4000, 0
	.cfi_offset x19, -16			/* advance_loc2 */
	.skip	280000, 0
	.cfi_def_cfa_offset 24			/* advance_loc4 */
	nop
	.cfi_endproc
	.size	cfi_zoo_far, .-cfi_zoo_far

/* DW_CFA_GNU_negative_offset_extended (obsolete GNU opcode 0x2f), alone in
 * its FDE: x19, 2 -> saved at cfa+16 (the factored offset is negated). */
	.globl	cfi_zoo_negative
	.type	cfi_zoo_negative, %function
	.p2align 2
cfi_zoo_negative:
	.cfi_startproc
	nop
	.cfi_escape 0x2f, 0x13, 0x02
	nop
	.cfi_endproc
	.size	cfi_zoo_negative, .-cfi_zoo_negative

	.section .note.GNU-stack,"",%progbits
