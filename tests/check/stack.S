/* backstep check --stack fixture (x86-64, static, no crt files): functions
 * whose CFI lies in exactly one way each, the same functions with CFI that
 * tells the truth, and shapes the analysis must follow without a false
 * difference. stack.py asserts the exact instructions (symbol + offset)
 * of every difference, and that the rest is checked.
 *
 * Naming: lie_F has exactly one difference at each marker M_lie_F_k (a
 * symbol of no type and size, which names no function) and none
 * elsewhere; ok_* has none and is checked in full; part_* is checked in
 * part, for the reason stack.py names.
 */
	.text
	.globl _start
	.type _start, @function
_start:				/* outermost: not compared, not reported */
	.cfi_startproc
	.cfi_undefined rip
	xorl %ebp, %ebp
	andq $-16, %rsp
	call ok_push
	movl $60, %eax
	xorl %edi, %edi
	syscall
	hlt
	.cfi_endproc
	.size _start, .-_start

	.p2align 4
	.type leaf, @function
leaf:
	.cfi_startproc
	leaq 1(%rdi), %rax
	ret
	.cfi_endproc
	.size leaf, .-leaf

/* ---- One lie each --------------------------------------------------- */

	/* The CFA offset off by 8 after a push, for one instruction. */
	.p2align 4
	.type lie_push_offset, @function
lie_push_offset:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 24		/* lie: 16 */
	.cfi_offset rbx, -16
M_lie_push_offset_0:
	movq %rdi, %rbx
	.cfi_def_cfa_offset 16
	call leaf
	addq %rbx, %rax
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_push_offset, .-lie_push_offset

	.p2align 4
	.type ok_push, @function
ok_push:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movq %rdi, %rbx
	call leaf
	addq %rbx, %rax
	popq %rbx			/* no .cfi_restore: that is no lie */
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ok_push, .-ok_push

	/* No CFA-offset change after the epilogue's pop: the ret. */
	.p2align 4
	.type lie_pop_offset, @function
lie_pop_offset:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movq %rdi, %rbx
	call leaf
	addq %rbx, %rax
	popq %rbx			/* lie: no .cfi_def_cfa_offset 8 */
M_lie_pop_offset_0:
	ret
	.cfi_endproc
	.size lie_pop_offset, .-lie_pop_offset

	/* A save recorded at the wrong slot, for one instruction. */
	.p2align 4
	.type lie_save_slot, @function
lie_save_slot:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	pushq %rbx
	.cfi_def_cfa_offset 24
	.cfi_offset rbx, -16		/* lie: -24 (rbp's slot) */
M_lie_save_slot_0:
	movq %rdi, %rbx
	.cfi_offset rbx, -24
	call leaf
	popq %rbx
	.cfi_def_cfa_offset 16
	popq %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_save_slot, .-lie_save_slot

	.p2align 4
	.type ok_save_slot, @function
ok_save_slot:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	pushq %rbx
	.cfi_def_cfa_offset 24
	.cfi_offset rbx, -24
	movq %rdi, %rbx
	call leaf
	popq %rbx
	.cfi_def_cfa_offset 16
	popq %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ok_save_slot, .-ok_save_slot

	/* No row after leave: the ret still says CFA = rbp+16. */
	.p2align 4
	.type lie_leave, @function
lie_leave:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register rbp
	subq $16, %rsp
	call leaf
	leave				/* lie: no .cfi_def_cfa rsp, 8 */
M_lie_leave_0:
	ret
	.cfi_endproc
	.size lie_leave, .-lie_leave

	.p2align 4
	.type ok_leave, @function
ok_leave:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register rbp
	subq $16, %rsp
	call leaf
	leave
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size ok_leave, .-ok_leave

	/* remember_state restored one row late: the first instruction after
	 * the early return still has the epilogue's row. */
	.p2align 4
	.type lie_remember, @function
lie_remember:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	testq %rdi, %rdi
	je 1f
	.cfi_remember_state
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
1:
M_lie_remember_0:
	movq %rdi, %rax			/* lie: restore_state belongs before it */
	.cfi_restore_state
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_remember, .-lie_remember

	.p2align 4
	.type ok_remember, @function
ok_remember:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	testq %rdi, %rdi
	je 1f
	.cfi_remember_state
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_restore_state
1:	movq %rdi, %rax
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ok_remember, .-ok_remember

	/* A push with no CFI at all, then r12 changed: the CFA is wrong at
	 * two instructions, r12 at the second. */
	.p2align 4
	.type lie_no_save, @function
lie_no_save:
	.cfi_startproc
	pushq %r12			/* lie: no .cfi_def_cfa_offset, no .cfi_offset */
M_lie_no_save_0:
	movq %rdi, %r12
M_lie_no_save_1:
	popq %r12
	ret
	.cfi_endproc
	.size lie_no_save, .-lie_no_save

	/* alloca: rsp moves by a register amount, the CFA stays on rsp. */
	.p2align 4
	.type lie_alloca, @function
lie_alloca:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq %rsp, %rbp
	subq %rdi, %rsp			/* lie: no .cfi_def_cfa_register rbp */
M_lie_alloca_0:
	movq %rbp, %rsp
	popq %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_alloca, .-lie_alloca

	.p2align 4
	.type ok_alloca, @function
ok_alloca:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register rbp
	subq %rdi, %rsp
	andq $-16, %rsp
	movq %rsp, %rdi
	call leaf
	movq %rbp, %rsp
	popq %rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size ok_alloca, .-ok_alloca

/* ---- Shapes to follow ------------------------------------------------ */

	/* A jump table (PIC, as gcc and clang emit it), a frame around it;
	 * case 2 lies: only the table leads there. */
	.p2align 4
	.type lie_switch, @function
lie_switch:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movl %edi, %ebx
	cmpl $3, %edi
	ja .Ldefault
	movl %edi, %edi
	leaq .Ltable(%rip), %rdx
	movslq (%rdx,%rdi,4), %rax
	addq %rdx, %rax
	jmp *%rax
.Lcase0:
	movl $10, %eax
	jmp .Lout
.Lcase1:
	call leaf
	jmp .Lout
.Lcase2:
	pushq %rax
	.cfi_def_cfa_offset 32		/* lie: 24 */
M_lie_switch_0:
	popq %rax
	.cfi_def_cfa_offset 16
	jmp .Lout
.Lcase3:
	leaq 3(%rbx), %rax
	jmp .Lout
.Ldefault:
	xorl %eax, %eax
.Lout:
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_switch, .-lie_switch

	.section .rodata
	.p2align 2
.Ltable:
	.long .Lcase0 - .Ltable
	.long .Lcase1 - .Ltable
	.long .Lcase2 - .Ltable
	.long .Lcase3 - .Ltable
	.text

	/* Calls that never return, by name (abort) and by what the callee
	 * is (die: no return anywhere): the code after them belongs to
	 * another path with another stack height. */
	.p2align 4
	.type ok_noreturn, @function
ok_noreturn:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	testq %rdi, %rdi
	jne 1f
	subq $8, %rsp
	.cfi_def_cfa_offset 24
	call abort
	.cfi_def_cfa_offset 16
1:	cmpq $1, %rdi
	jne 2f
	pushq %rdi
	.cfi_def_cfa_offset 24
	call die
	.cfi_def_cfa_offset 16
2:	movq %rdi, %rax
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ok_noreturn, .-ok_noreturn

	.p2align 4
	.type abort, @function
abort:
	.cfi_startproc
	ud2
	.cfi_endproc
	.size abort, .-abort

	.p2align 4
	.type die, @function
die:
	.cfi_startproc
	subq $8, %rsp
	.cfi_def_cfa_offset 16
	movl $60, %eax
	syscall
	call abort
	.cfi_endproc
	.size die, .-die

	/* A tail call after the epilogue, a second epilogue, flags pushed,
	 * rsp moved by lea, rbp set and restored by mov. */
	.p2align 4
	.type ok_shapes, @function
ok_shapes:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	pushfq
	.cfi_def_cfa_offset 24
	popfq
	.cfi_def_cfa_offset 16
	leaq -16(%rsp), %rsp
	.cfi_def_cfa_offset 32
	movq %rsp, %rbp
	.cfi_def_cfa_register rbp
	testq %rdi, %rdi
	je 1f
	.cfi_remember_state
	movq %rbp, %rsp
	.cfi_def_cfa_register rsp
	leaq 16(%rsp), %rsp
	.cfi_def_cfa_offset 16
	popq %rbp
	.cfi_restore rbp
	.cfi_def_cfa_offset 8
	jmp leaf			/* a tail call */
1:	.cfi_restore_state
	movq %rbp, %rsp
	.cfi_def_cfa_register rsp
	addq $16, %rsp
	.cfi_def_cfa_offset 16
	popq %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ok_shapes, .-ok_shapes

	/* Stack realignment through a DRAP register (gcc's shape), with the
	 * rules as DWARF expressions, and the epilogue done right. */
	.p2align 4
	.type ok_drap, @function
ok_drap:
	.cfi_startproc
	leaq 8(%rsp), %r10
	.cfi_def_cfa r10, 0
	andq $-32, %rsp
	pushq -8(%r10)
	pushq %rbp
	movq %rsp, %rbp
	/* rbp at [rbp+0]: DW_CFA_expression rbp, DW_OP_breg6 0 */
	.cfi_escape 0x10, 0x06, 0x02, 0x76, 0x00
	pushq %r10
	/* CFA = [rbp-8]: DW_CFA_def_cfa_expression DW_OP_breg6 -8; DW_OP_deref */
	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06
	pushq %rbx
	/* rbx at [rbp-16] */
	.cfi_escape 0x10, 0x03, 0x02, 0x76, 0x70
	subq $32, %rsp
	movq %rdi, %rbx
	call leaf
	addq %rbx, %rax
	leaq -16(%rbp), %rsp
	popq %rbx
	.cfi_restore rbx
	popq %r10
	.cfi_def_cfa r10, 0
	popq %rbp
	.cfi_restore rbp
	leaq -8(%r10), %rsp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size ok_drap, .-ok_drap

	/* The same epilogue as gcc 12 emits it (fixtures/KNOWN.md #1): the
	 * rules over rbp outlive `pop rbp`, at the lea and the ret. */
	.p2align 4
	.type lie_drap, @function
lie_drap:
	.cfi_startproc
	leaq 8(%rsp), %r10
	.cfi_def_cfa r10, 0
	andq $-32, %rsp
	pushq -8(%r10)
	pushq %rbp
	movq %rsp, %rbp
	.cfi_escape 0x10, 0x06, 0x02, 0x76, 0x00
	pushq %r10
	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06
	pushq %rbx
	.cfi_escape 0x10, 0x03, 0x02, 0x76, 0x70
	subq $32, %rsp
	movq %rdi, %rbx
	call leaf
	addq %rbx, %rax
	leaq -16(%rbp), %rsp
	popq %rbx
	popq %r10
	.cfi_def_cfa r10, 0
	popq %rbp
M_lie_drap_0:
	leaq -8(%r10), %rsp
	.cfi_def_cfa rsp, 8
M_lie_drap_1:
	ret
	.cfi_endproc
	.size lie_drap, .-lie_drap

	/* A register saved in another register, and a save described by an
	 * expression over the CFA (DW_CFA_expression rbx, lit24; minus... as
	 * breg7 since the evaluator pushes the CFA: CFA-16 = slot). */
	.p2align 4
	.type ok_register_rule, @function
ok_register_rule:
	.cfi_startproc
	movq %rbx, %r11
	.cfi_register rbx, r11
	movq %rdi, %rbx
	leaq 1(%rbx), %rax
	movq %r11, %rbx
	.cfi_restore rbx
	pushq %rbx
	.cfi_def_cfa_offset 16
	/* rbx at [CFA-16]: DW_CFA_expression rbx, DW_OP_lit16; DW_OP_minus */
	.cfi_escape 0x10, 0x03, 0x02, 0x40, 0x1c
	xorl %ebx, %ebx
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ok_register_rule, .-ok_register_rule

	/* The hot part jumps into its .cold part with rbx pushed; the cold
	 * part's first row says so (ok_split) or not (lie_split.cold). */
	.p2align 4
	.type ok_split, @function
ok_split:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	testq %rdi, %rdi
	je ok_split.cold
.Lok_split_back:
	movq %rdi, %rax
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ok_split, .-ok_split

	.p2align 4
	.type lie_split, @function
lie_split:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	testq %rdi, %rdi
	je lie_split.cold
.Llie_split_back:
	movq %rdi, %rax
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_split, .-lie_split

	.section .text.unlikely, "ax", @progbits
	.type ok_split.cold, @function
ok_split.cold:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	call leaf
	jmp .Lok_split_back
	.cfi_endproc
	.size ok_split.cold, .-ok_split.cold

	.type lie_split.cold, @function
lie_split.cold:
	.cfi_startproc
	.cfi_def_cfa_offset 24		/* lie: 16 */
	.cfi_offset rbx, -16
M_lie_split.cold_0:
	call leaf
	.cfi_def_cfa_offset 16
	jmp .Llie_split_back
	.cfi_endproc
	.size lie_split.cold, .-lie_split.cold
	.text

	/* An indirect jump that is no table: the code after it is not
	 * reached ("indirect jump"), never guessed. */
	.p2align 4
	.type part_ijump, @function
part_ijump:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movq (%rdi), %rax
	jmp *%rax
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size part_ijump, .-part_ijump

	/* A CFA that is not the caller's SP (GHC's StgRun): the row says
	 * CFA = rsp+0, the saves and the return address at positive offsets
	 * from it, and gives rsp a rule of its own (val_expression rsp+312),
	 * which is what the caller's SP is then. */
	.p2align 4
	.type ok_cfa_not_caller_sp, @function
ok_cfa_not_caller_sp:
	.cfi_startproc
	subq $0x30, %rsp
	.cfi_def_cfa_offset 56
	movq %rsp, %rax
	subq $0x100, %rsp
	.cfi_def_cfa_offset 312
	movq %rbx, (%rax)
	.cfi_def_cfa rsp, 0
	.cfi_offset rbx, 256
	.cfi_offset rip, 304
	.cfi_escape 0x16, 0x07, 0x03, 0x77, 0xb8, 0x02	/* val_expression rsp: rsp+312 */
	call leaf
	movq 256(%rsp), %rbx
	addq $0x130, %rsp
	.cfi_def_cfa rsp, 8
	.cfi_offset rip, -8
	.cfi_restore rbx
	.cfi_restore rsp
	ret
	.cfi_endproc
	.size ok_cfa_not_caller_sp, .-ok_cfa_not_caller_sp

	/* The same, the caller's SP 8 bytes off. */
	.p2align 4
	.type lie_cfa_not_caller_sp, @function
lie_cfa_not_caller_sp:
	.cfi_startproc
	subq $0x30, %rsp
	.cfi_def_cfa_offset 56
	movq %rsp, %rax
	subq $0x100, %rsp
	.cfi_def_cfa_offset 312
	movq %rbx, (%rax)
	.cfi_def_cfa rsp, 0
	.cfi_offset rbx, 256
	.cfi_offset rip, 304
	.cfi_escape 0x16, 0x07, 0x03, 0x77, 0xb0, 0x02	/* lie: rsp+304 */
M_lie_cfa_not_caller_sp_0:
	call leaf
M_lie_cfa_not_caller_sp_1:
	movq 256(%rsp), %rbx
M_lie_cfa_not_caller_sp_2:
	addq $0x130, %rsp
	.cfi_def_cfa rsp, 8
	.cfi_offset rip, -8
	.cfi_restore rbx
	.cfi_restore rsp
	ret
	.cfi_endproc
	.size lie_cfa_not_caller_sp, .-lie_cfa_not_caller_sp

	/* A local pointer to the frame, its address given to a callee that
	 * changes it: after the call it is not believed, so the store through
	 * it is not taken for one into the return address's slot. */
	.p2align 4
	.type ok_escape, @function
ok_escape:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	subq $32, %rsp
	.cfi_def_cfa_offset 48
	leaq 16(%rsp), %rax		/* CFA-32 */
	movq %rax, 8(%rsp)		/* p = &buf */
	leaq 8(%rsp), %rdi
	call set_ptr			/* p = &scratch */
	movq 8(%rsp), %rax
	movq %rdi, 24(%rax)		/* p[3]: CFA-8 if p were still &buf */
	addq $32, %rsp
	.cfi_def_cfa_offset 16
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ok_escape, .-ok_escape

	.p2align 4
	.type set_ptr, @function
set_ptr:
	.cfi_startproc
	leaq scratch(%rip), %rax
	movq %rax, (%rdi)
	ret
	.cfi_endproc
	.size set_ptr, .-set_ptr
	.local scratch
	.comm scratch, 64, 16

	/* Realigned by 32 with the CFA rule left on rsp: how far the CFA is
	 * cannot be proven, so those instructions are not checked
	 * ("realigned stack"), never called right or wrong. */
	.p2align 4
	.type part_realign, @function
part_realign:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq %rsp, %rbp
	andq $-32, %rsp
	subq $32, %rsp
	.cfi_def_cfa_offset 48
	movq %rbp, %rsp
	.cfi_def_cfa_offset 16
	popq %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size part_realign, .-part_realign

	/* A save described over a register that holds no frame address:
	 * "expression rule", not checked. */
	.p2align 4
	.type part_expression, @function
part_expression:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	/* rbx at [rax+0]: DW_CFA_expression rbx, DW_OP_breg0 0 */
	.cfi_escape 0x10, 0x03, 0x02, 0x70, 0x00
	movq (%rdi), %rax
	popq %rbx
	.cfi_def_cfa_offset 8
	.cfi_restore rbx
	ret
	.cfi_endproc
	.size part_expression, .-part_expression

	/* A table indexed by a register bounded by a compare, but with
	 * another conditional branch between: the compiler may know a
	 * narrower range there and size the table by it (this one has two
	 * entries; what follows it is no table). Such a bound is used only
	 * when every entry up to it names an instruction of the function;
	 * the third one here lies inside the movabs: not read, "indirect
	 * jump". */
	.p2align 4
	.type part_stale_bound, @function
part_stale_bound:
	.cfi_startproc
	cmpl $3, %edi
	ja 9f
	movl %edi, %edi
	testl %esi, %esi
	je 9f
	leaq .Lt2(%rip), %rdx
	movslq (%rdx,%rdi,4), %rax
	addq %rdx, %rax
	jmp *%rax
1:	movl $1, %eax
	ret
2:	movabsq $0x1122334455667788, %rax
	ret
9:	xorl %eax, %eax
	ret
	.cfi_endproc
	.size part_stale_bound, .-part_stale_bound
	.section .rodata
	.p2align 2
.Lt2:
	.long 1b - .Lt2
	.long 2b - .Lt2
	.long 2b + 3 - .Lt2		/* inside the movabs: no entry of this table */
	.long 2b + 5 - .Lt2
	.text

	/* A signal trampoline ('S'): not analysed. */
	.p2align 4
	.type sigtramp, @function
sigtramp:
	.cfi_startproc
	.cfi_signal_frame
	.cfi_def_cfa_offset 160
	movl $15, %eax
	syscall
	.cfi_endproc
	.size sigtramp, .-sigtramp
