/* A signal frame (.cfi_signal_frame: augmentation "zRS" in .eh_frame, "S" in
 * .debug_frame). Never called; only its CFI is read. Built into the fixtures
 * with its CFI in .eh_frame, and alone (-DSIGNAL_DEBUG_FRAME, as a shared
 * object) with its CFI in .debug_frame: GNU as then writes a CIE whose
 * augmentation is "S" without "z", which libdwarf 20210528 rejects for the
 * whole section (README.md), so it is kept out of the other fixtures'
 * .debug_frame. */
#ifdef SIGNAL_DEBUG_FRAME
	.cfi_sections .debug_frame
#endif
	.text
	.globl	cfi_zoo_signal
	.type	cfi_zoo_signal, @function
	nop
cfi_zoo_signal:
	.cfi_startproc
	.cfi_signal_frame
	.cfi_def_cfa %rsp, 160
	.cfi_offset %rip, -8
	.cfi_offset %rsp, -16
	nop
	.cfi_endproc
	.size	cfi_zoo_signal, .-cfi_zoo_signal

	.globl	cfi_zoo_signal2
	.type	cfi_zoo_signal2, @function
cfi_zoo_signal2:
	.cfi_startproc
	.cfi_signal_frame
	nop
	.cfi_def_cfa %rsp, 200
	.cfi_offset %rip, -40
	.cfi_offset %rbx, -48
	nop
	.cfi_endproc
	.size	cfi_zoo_signal2, .-cfi_zoo_signal2

	.section .note.GNU-stack,"",@progbits
