#!/usr/bin/env bash
# Install what backstep needs from Debian 12 (only what is missing; quick when
# everything is there), then configure and build it in ./build.
# Run as root on a fresh machine; re-running is cheap.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
	meson ninja-build pkg-config gcc g++ clang libclang-rt-14-dev
	libelf-dev libdwarf-dev libiberty-dev zlib1g-dev libdeflate-dev libzstd-dev liblzma-dev libdebuginfod-dev libcapstone-dev
	elfutils debuginfod binutils dwz python3 libunwind8 valgrind linux-perf chromium
	# split DWARF packages (llvm-dwp-14; binutils has dwp), and Debian's debug
	# files of python3.11, the live test of a distribution's own program
	llvm-14 python3.11-dbg
	# a JIT that writes perf maps (/tmp/perf-PID.map): tests/live/node_test.py;
	# a libc without unwind tables (static musl): tests/live/musl_test.py
	nodejs musl-tools
	groff-base # (the man page is checked by rendering it: tests/install_check.sh)
	# validate --remote: the x86-64 cross-check of the GDB remote driver
	gdbserver
	gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross
	# The AArch64 build (cross/aarch64-linux-gnu.ini), tested under qemu-user:
	# the libraries libbackstep links (and Capstone, which the CLI loads for
	# check --stack), as Debian's arm64 multiarch packages
	# (libc6:arm64, which the tests run with, comes with them).
	g++-aarch64-linux-gnu qemu-user
	libelf-dev:arm64 libdwarf-dev:arm64 libiberty-dev:arm64 zlib1g-dev:arm64
	libdeflate-dev:arm64 libzstd-dev:arm64 liblzma-dev:arm64 libcapstone-dev:arm64
	# check --stack measured on the arm64 libstdc++ too (bench/check_stack.sh)
	libstdc++6:arm64
	# check --stack over whole directories, one run per file (README.md,
	# docs/validation.md)
	parallel
)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	dpkg --add-architecture arm64 # (the next apt-get update fetches its lists)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f build/build.ninja ]; then
	meson setup build >/dev/null
fi
ninja -C build >/dev/null
echo "setup: built ./build/tools/backstep" >&2
