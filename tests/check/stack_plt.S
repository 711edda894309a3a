/* backstep check --stack fixture: a shared object whose code calls
 * through the PLT (puts, a tail call to free, abort: it never returns, by
 * its relocation's name), linked by stack.py with lazy binding, -z now and
 * IBT PLTs. Every instruction, the PLT's included, must be checked and
 * agree with its row. */
	.text
	.globl f_plt
	.type f_plt, @function
f_plt:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movq %rdi, %rbx
	testq %rdi, %rdi
	jne 1f
	subq $8, %rsp			/* another stack height than at 1: */
	.cfi_def_cfa_offset 24
	call abort@PLT
	.cfi_def_cfa_offset 16
1:	call puts@PLT
	movq %rbx, %rdi
	popq %rbx
	.cfi_def_cfa_offset 8
	jmp free@PLT
	.cfi_endproc
	.size f_plt, .-f_plt

	.globl g_plt
	.type g_plt, @function
g_plt:
	.cfi_startproc
	subq $8, %rsp
	.cfi_def_cfa_offset 16
	call *strlen@GOTPCREL(%rip)
	addq $8, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size g_plt, .-g_plt
