/* backstep check fixture: one deliberate defect per function, each named
 * after it; check.py asserts exactly the findings listed there. Built with
 * gcc -nostdlib -static (no crt files, so no crt gaps). x86-64 only. */
	.text
	.globl _start
	.type _start, @function
_start:				/* outermost frame: info only */
	.cfi_startproc
	.cfi_undefined rip
	call good
	call nocfi
	hlt
	.cfi_endproc
	.size _start, .-_start

	.p2align 4
	.type good, @function
good:				/* clean: push/pop with remember/restore */
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	testq %rdi, %rdi
	je 1f
	.cfi_remember_state
	popq %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_restore_state
1:	popq %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size good, .-good

	/* gap: a function with no CFI at all, after alignment fill (not a gap) */
	.p2align 4
	.type nocfi, @function
nocfi:
	movl $1, %eax
	addl %edi, %eax
	ret
	.size nocfi, .-nocfi

	.p2align 4
	.type bad_entry, @function
bad_entry:			/* entry-row error: claims CFA = rsp+16 at entry */
	.cfi_startproc
	.cfi_def_cfa_offset 16
	nop
	ret
	.cfi_endproc
	.size bad_entry, .-bad_entry

	.p2align 4
	.type split.cold, @function
split.cold:			/* a split-off part: same row, only info */
	.cfi_startproc
	.cfi_def_cfa_offset 32
	nop
	ret
	.cfi_endproc
	.size split.cold, .-split.cold

	.p2align 4
	.type sigtramp, @function
sigtramp:			/* signal frame: exempt from the entry-row check */
	.cfi_startproc
	.cfi_signal_frame
	.cfi_def_cfa_offset 160
	nop
	ret
	.cfi_endproc
	.size sigtramp, .-sigtramp

	.p2align 4
	.type bad_restore, @function
bad_restore:			/* DW_CFA_restore_state with nothing remembered */
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_escape 0x0b
	popq %rbx
	ret
	.cfi_endproc
	.size bad_restore, .-bad_restore

	.p2align 4
	.type no_restore, @function
no_restore:			/* remember_state never restored: a warning */
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_escape 0x0a
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size no_restore, .-no_restore

	.p2align 4
	.type bad_opcode, @function
bad_opcode:			/* an opcode no DWARF version defines */
	.cfi_startproc
	nop
	.cfi_escape 0x3f
	ret
	.cfi_endproc
	.size bad_opcode, .-bad_opcode

	.p2align 4
	.type expr_then_reg, @function
expr_then_reg:			/* def_cfa_register after def_cfa_expression (libgcrypt) */
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	/* DW_CFA_def_cfa_expression { DW_OP_breg7 16; DW_OP_deref } */
	.cfi_escape 0x0f, 0x03, 0x77, 0x10, 0x06
	nop
	.cfi_def_cfa_register rsp
	popq %rbx
	ret
	.cfi_endproc
	.size expr_then_reg, .-expr_then_reg

	.p2align 4
	.type empty_fde, @function
empty_fde:			/* zero-length FDE: info */
	.cfi_startproc
	.cfi_endproc
	ret
	.size empty_fde, .-empty_fde

	.p2align 4
	.type with_strings, @function
with_strings:			/* strings kept in .text (perlasm style): info */
	.cfi_startproc
	ret
	.cfi_endproc
	.asciz "with_strings(8x,int)"
	.asciz "CRYPTOGAMS-like banner text"
	.size with_strings, .-with_strings

	/* Code in a non-executable section, with an FDE: outside-code */
	.section .rodata.code, "a"
	.type in_rodata, @function
in_rodata:
	.cfi_startproc
	ret
	.cfi_endproc
	.size in_rodata, .-in_rodata
