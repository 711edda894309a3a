/* bk_strerror: one static string per BK_E_* code. AS-safe. */
#include "base.h"

static const char *const messages[] = {
	[0] = "success",
	[-BK_E_INVAL] = "invalid argument",
	[-BK_E_NOMEM] = "out of memory",
	[-BK_E_IO] = "cannot read file",
	[-BK_E_NOT_ELF] = "not an ELF file",
	[-BK_E_CORRUPT] = "corrupt data",
	[-BK_E_UNSUPPORTED] = "unsupported format or feature",
	[-BK_E_NOT_FOUND] = "not found",
	[-BK_E_LIMIT] = "fixed limit exceeded",
	[-BK_E_MEMORY] = "memory read failed",
	[-BK_E_DIV_ZERO] = "division by zero in DWARF expression",
	[-BK_E_BAD_OP] = "DWARF operation not allowed in call-frame information",
	[-BK_E_NO_UNWIND] = "no unwind information (.eh_frame, .debug_frame)",
	[-BK_E_LOOP] = "unwinding made no progress",
	[-BK_E_BAD_REG] = "no such register",
};

const char *bk_strerror(int err)
{
	if (err > 0 || -(long)err >= (long)BK_ARRAY_LEN(messages) || !messages[-err])
		return "unknown error";
	return messages[-err];
}
