/* Shared pieces of the backstep command-line tool. */
#ifndef BK_CLI_H
#define BK_CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Print "backstep: WHAT: message" on stderr as one line. */
void cli_error(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Report why PATH could not be opened as an ELF file (err from the loader). */
void cli_file_error(const char *path, int err);
/* Parse an address ("0x1234", "1234" decimal, "0x" optional with --hex). */
bool cli_parse_u64(const char *s, uint64_t *out);

int cmd_dump(int argc, char **argv);

#endif
