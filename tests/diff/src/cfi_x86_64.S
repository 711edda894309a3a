/* Hand-written CFI for the differential test (x86-64).
 *
 * shape_asm_cfi is a real function whose CFI matches its code. The cfi_zoo_*
 * functions are never called: their CFI is a catalogue of every rule and
 * opcode the assembler can be made to emit (DW_CFA_* named in the comments),
 * so that all three readers have to agree on each of them. Only the decoding
 * is tested here, not whether the rules describe the code.
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
	.type	shape_asm_cfi, @function
shape_asm_cfi:
	.cfi_startproc
	pushq	%rbx
	.cfi_adjust_cfa_offset 8		/* DW_CFA_def_cfa_offset 16 */
	.cfi_rel_offset %rbx, 0			/* DW_CFA_offset rbx, cfa-16 */
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -24
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp		/* DW_CFA_def_cfa_register */
	movq	%rdi, %rbx
	subq	$32, %rsp
	movq	%rbx, %rdi
	call	opaque
	addq	%rbx, %rax
	movq	%rbp, %rsp
	.cfi_remember_state			/* DW_CFA_remember_state */
	.cfi_def_cfa %rsp, 24			/* DW_CFA_def_cfa */
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp			/* DW_CFA_restore */
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_restore_state			/* DW_CFA_restore_state */
	ud2
	.cfi_endproc
	.size	shape_asm_cfi, .-shape_asm_cfi

/* Every register rule kind, in .cfi_* directives. */
	.globl	cfi_zoo_rules
	.type	cfi_zoo_rules, @function
cfi_zoo_rules:
	.cfi_startproc
	nop
	.cfi_def_cfa_offset 16
	.cfi_offset %r15, -16			/* DW_CFA_offset */
	.cfi_offset %r14, 8			/* DW_CFA_offset_extended_sf (positive) */
	nop
	.cfi_same_value %rbx			/* DW_CFA_same_value */
	.cfi_undefined %r13			/* DW_CFA_undefined */
	.cfi_register %r12, %r11		/* DW_CFA_register */
	/* DW_CFA_val_offset rbp, 4 (factored: -32); clang's assembler has no
	 * .cfi_val_offset */
	.cfi_escape 0x14, 0x06, 0x04
	nop
	.cfi_offset 17, -48			/* xmm0, DW_CFA_offset */
	.cfi_offset 70, -56			/* DW_CFA_offset_extended (reg > 63) */
	.cfi_offset 125, -64			/* k7 */
	nop
	.cfi_restore 70				/* DW_CFA_restore_extended */
	.cfi_restore %r15			/* DW_CFA_restore: back to no rule */
	.cfi_restore %rbx
	nop
	.cfi_undefined %rip			/* return address undefined */
	nop
	.cfi_endproc
	.size	cfi_zoo_rules, .-cfi_zoo_rules

/* Nested remember/restore, and a register first given a rule inside a
 * remembered region (it must lose it again at the restore). */
	.globl	cfi_zoo_state
	.type	cfi_zoo_state, @function
cfi_zoo_state:
	.cfi_startproc
	nop
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	.cfi_remember_state
	nop
	.cfi_def_cfa_offset 32
	.cfi_offset %r12, -24
	.cfi_remember_state
	nop
	.cfi_def_cfa %rbp, 48
	.cfi_offset %r13, -32
	.cfi_restore %rbx
	nop
	.cfi_restore_state			/* back to cfa+32, rbx, r12 */
	nop
	.cfi_restore_state			/* back to cfa+16, rbx */
	nop
	.cfi_offset %r14, -40
	nop
	.cfi_endproc
	.size	cfi_zoo_state, .-cfi_zoo_state

/* DWARF expressions, and opcodes the directives cannot spell, by
 * .cfi_escape. Data alignment is -8, code alignment 1. */
	.globl	cfi_zoo_escape
	.type	cfi_zoo_escape, @function
cfi_zoo_escape:
	.cfi_startproc
	nop
	/* DW_CFA_expression rbx: DW_OP_breg7 (rsp) +8 */
	.cfi_escape 0x10, 0x03, 0x02, 0x77, 0x08
	/* DW_CFA_val_expression r12: DW_OP_breg7 +16; DW_OP_lit4; DW_OP_plus */
	.cfi_escape 0x16, 0x0c, 0x04, 0x77, 0x10, 0x34, 0x22
	nop
	/* DW_CFA_def_cfa_expression: DW_OP_breg6 (rbp) -8; DW_OP_deref */
	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06
	nop
	/* DW_CFA_def_cfa_sf rsp, -2 (factored: 16) */
	.cfi_escape 0x12, 0x07, 0x7e
	nop
	/* DW_CFA_def_cfa_offset_sf -3 (factored: 24) */
	.cfi_escape 0x13, 0x7d
	/* DW_CFA_val_offset_sf rbp, 2 (factored: -16) */
	.cfi_escape 0x15, 0x06, 0x02
	/* DW_CFA_offset_extended r13, 3 (factored: -24) */
	.cfi_escape 0x05, 0x0d, 0x03
	nop
	/* DW_CFA_GNU_args_size 16: no rule changes */
	.cfi_escape 0x2e, 0x10
	nop
	/* DW_CFA_nop padding in the middle */
	.cfi_escape 0x00, 0x00
	.cfi_def_cfa_offset 40
	/* DW_CFA_advance_loc 0 then a change at the same address */
	.cfi_escape 0x40
	.cfi_offset %r14, -48
	nop
	/* DW_CFA_def_cfa_register back to a register rule after an expression */
	.cfi_def_cfa %rsp, 8
	/* DW_CFA_expression with a multi-byte block (DW_OP_const8u) */
	.cfi_escape 0x10, 0x0f, 0x0b, 0x77, 0x00, 0x0e, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11
	nop
	.cfi_endproc
	.size	cfi_zoo_escape, .-cfi_zoo_escape

/* Long advances (DW_CFA_advance_loc1/2/4) and large offsets. */
	.globl	cfi_zoo_far
	.type	cfi_zoo_far, @function
cfi_zoo_far:
	.cfi_startproc
	nop
	.cfi_def_cfa_offset 100000		/* multi-byte ULEB */
	.skip	100, 0x90
	.cfi_def_cfa_offset 16			/* after advance_loc1 */
	.skip	1000, 0x90
	.cfi_offset %rbx, -16			/* after advance_loc2 */
	.skip	70000, 0x90
	.cfi_def_cfa_offset 24			/* after advance_loc4 */
	nop
	.cfi_def_cfa %rsp, 0x123456789		/* offset above 32 bits */
	nop
	.cfi_endproc
	.size	cfi_zoo_far, .-cfi_zoo_far

/* DW_CFA_GNU_negative_offset_extended (obsolete GNU opcode 0x2f), alone in
 * its FDE: rbx, 2 -> saved at cfa+16 (the factored offset is negated). */
	.globl	cfi_zoo_negative
	.type	cfi_zoo_negative, %function
	.p2align 2
cfi_zoo_negative:
	.cfi_startproc
	nop
	.cfi_escape 0x2f, 0x03, 0x02
	nop
	.cfi_endproc
	.size	cfi_zoo_negative, .-cfi_zoo_negative

	.section .note.GNU-stack,"",@progbits
