#!/usr/bin/env python3
"""The manual page and the bash completion keep up with the command line.

    docs_test.py BACKSTEP SRCDIR

For every subcommand, every option its --help names (-x and --long) must be
described in the man page's section for that subcommand (".SS backstep SUB")
and offered by the completion (completion/backstep.bash, run in bash) after
"backstep SUB -". The completion also completes the subcommands, option
values (--format, --method, --section, --suppress), process ids for pid and
record -p, commands after "--", and files.
"""
import os
import re
import subprocess
import sys

from checks import check, finish

backstep, srcdir = sys.argv[1], sys.argv[2]
man = open(os.path.join(srcdir, "man", "backstep.1")).read().replace("\\-", "-")
completion = os.path.join(srcdir, "completion", "backstep.bash")
SUBCOMMANDS = ["run", "pid", "core", "dump", "check", "validate", "report", "record"]




def complete(*words):
    """What the completion offers for `backstep WORDS...` (the last word is
    the one being completed)."""
    script = ('. "$1"; shift; COMP_WORDS=(backstep "$@"); COMP_CWORD=$#; _backstep; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "-c", script, "_", completion, *words], capture_output=True,
                       text=True, timeout=30, cwd=srcdir)
    check(p.returncode == 0 and p.stderr == "", f"completion of {words}: {p.stderr!r}")
    return set(p.stdout.split())


def section(sub):
    m = re.search(r"^\.SS backstep %s\b.*?(?=^\.S[SH] )" % sub, man, re.M | re.S)
    return m.group(0) if m else ""


for sub in SUBCOMMANDS:
    usage = subprocess.run([backstep, sub, "--help"], capture_output=True, text=True).stdout
    opts = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*[a-z]|-[a-zA-Z])(?![\w-])", usage))
    opts.discard("--help")
    text = section(sub)
    check(text, f"man page: no section '.SS backstep {sub}'")
    offered = complete(sub, "-")
    for o in sorted(opts):
        check(re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), text),
              f"man page: {sub}'s {o} is not in its section")
        check(o in offered, f"completion: {sub}'s {o} is not offered (offered {sorted(offered)})")
    print(f"{sub}: {len(opts)} options in the man page and the completion")

check(set(SUBCOMMANDS) <= complete(""), f"completion: the subcommands: {complete('')}")
check({"perf-script", "svg"} <= complete("report", "--format", ""), "completion: --format")
check(complete("validate", "--method", "") == {"cfi", "fp", "fast"}, "completion: --method")
check(complete("dump", "--section", "") == {"eh", "debug"}, "completion: --section")
check({"gap", "toolchain-gap", "stack"} <= complete("check", "--suppress", ""),
      "completion: --suppress kinds")
check(str(os.getpid()) in complete("pid", ""), "completion: pid offers process ids")
check(str(os.getpid()) in complete("record", "-p", ""), "completion: record -p offers ids")
check("bash" in complete("run", "--", "bas"), "completion: a command after run --")
check("README.md" in complete("dump", "READ"), "completion: files for dump")
check("README.md" in complete("run", "--", "prog", "READ"), "completion: files after CMD")
finish("docs")
