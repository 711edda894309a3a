"""Debian's python3.11 (separate debug files from python3.11-dbg, found by
build-id) parked in nested Python calls: the main thread in select() with
no descriptors, a second thread in time.sleep(). Prints "ready" once both
are about to block."""
import select
import threading
import time

started = threading.Event()


def sleeper():
    started.set()
    while True:
        time.sleep(3600)


def leaf():
    started.wait()
    time.sleep(0.3)  # the sleeper is in its system call by then
    print("ready", flush=True)
    while True:
        select.select([], [], [])


def nest(n):
    return leaf() if n == 0 else nest(n - 1)


threading.Thread(target=sleeper, daemon=True).start()
nest(4)
