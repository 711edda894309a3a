"""The tally the test scripts of tests/check keep: check() counts a check
and prints a failed one, finish() prints the totals and exits 1 if any
check failed."""
import sys

failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what)


def finish():
    print(f"{checks} checks, {failures} failures")
    sys.exit(1 if failures else 0)
