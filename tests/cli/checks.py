"""The pass/fail tally the CLI tests share: check() counts a condition and
prints what failed; finish() prints the totals and exits 1 on any failure."""
import sys

fails = checks = 0


def check(cond, what):
    global fails, checks
    checks += 1
    if not cond:
        fails += 1
        print("FAIL: " + what)
    return cond


def finish(label):
    print(f"{label}: {checks - fails} passed, {fails} failed")
    sys.exit(1 if fails else 0)
