#!/usr/bin/env bash
# avx512-emu.sh runs internal/kernels' tests of the AVX-512 and AVX512-VNNI
# paths on an emulated Ice Lake CPU, for machines that lack AVX-512: it
# boots Linux in the Bochs emulator with a test binary as its init and
# prints what the tests print. It checks correctness only; emulated speed
# says nothing about real speed.
#
# Usage: scripts/avx512-emu.sh [TEST_REGEXP]
#
# For internal/kernels the default TEST_REGEXP selects the tests that run
# the AVX-512 float32 GEMM kernel and the VNNI int8 kernel (the kernel
# lists and the assembly-against-Go tests, the GEMM drivers, convolutions
# and the int8 GEMMs); "." runs the package's whole suite. For any other
# package the default is ".".
#
# Environment:
#   BOCHS      a Bochs 3 binary built with EVEX (AVX-512) support. When
#              unset, one is built from BOCHS_SRC (a checkout of
#              https://github.com/bochs-emu/Bochs), cloned when unset.
#              Debian 12's bochs 2.7 did not boot Linux 6.1 with AVX-512
#              models here (a page-fault loop after "Mountpoint-cache").
#   KERNEL     an x86-64 Linux bzImage with a serial console and initramfs
#              support (default: Debian's newest linux-image-6.12*-cloud,
#              fetched with apt-get download; 6.1 hung under Bochs here).
#   WORK       scratch directory (default: /tmp/headroom-avx512emu)
#   CPU_MODEL  Bochs CPU model (default: corei7_icelake_u: AVX-512 F, BW,
#              VL, DQ and VNNI; sapphire_rapids adds AVX512_BF16, which the
#              VDPBF16PS GEMM and attention tests need)
#   TIMEOUT    seconds before giving up (default: 5400)
#   PKG        the package whose tests run (default: ./internal/kernels)
#
# It installs nothing. It needs: Go, cpio, grub-mkrescue with its BIOS
# modules and xorriso (Debian: apt-get install -y cpio grub-pc-bin
# grub-common xorriso mtools), apt-get download (for the default kernel),
# and to build Bochs g++ and make.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

work=${WORK:-/tmp/headroom-avx512emu}
model=${CPU_MODEL:-corei7_icelake_u}
limit=${TIMEOUT:-5400}
pkg=${PKG:-./internal/kernels}
kernelTests='^(TestGemmF32|TestGemmKernelsSmallBlocks|TestGemmPackers|TestGemmAsmMatchesGo|TestGemmHalf|TestGemmConcurrent|TestGemmNoAllocs|TestGemmI8Exact|TestGemmI8LargestK|TestI8QuadsKernelMatchesGo|TestI8PackBQuads|TestI8KernelMatchesGo|TestGemmI8T|TestConv2dI8|TestConv2dKernels|TestConv2dPaths|TestDequantI32)$'
if [ "$pkg" = ./internal/kernels ]; then tests=${1:-$kernelTests}; else tests=${1:-.}; fi

for tool in cpio grub-mkrescue xorriso go; do
	command -v "$tool" >/dev/null || { echo "avx512-emu: $tool not found (see the header of $0)" >&2; exit 2; }
done
mkdir -p "$work"

# Bochs.
bochs=${BOCHS:-}
if [ -z "$bochs" ]; then
	src=${BOCHS_SRC:-$work/Bochs}
	if [ ! -d "$src/bochs" ]; then
		git clone --depth 1 https://github.com/bochs-emu/Bochs "$src"
	fi
	bochs=$src/bochs/bochs
	if [ ! -x "$bochs" ]; then
		echo "avx512-emu: building Bochs in $src/bochs (a few minutes)" >&2
		(cd "$src/bochs" && ./configure --enable-x86-64 --enable-evex --enable-avx --enable-cpu-level=6 \
			--with-nogui --enable-all-optimizations --disable-debugger --disable-plugins --disable-usb \
			--enable-pci --enable-repeat-speedups --enable-fast-function-calls --enable-handlers-chaining \
			>"$work/bochs-configure.log" && make -j"$(nproc)" >"$work/bochs-make.log")
	fi
fi
bios=$(dirname "$bochs")/bios
[ -f "$bios/BIOS-bochs-latest" ] || bios=${BOCHS_BIOS:?set BOCHS_BIOS to the directory holding BIOS-bochs-latest}

# Kernel.
kernel=${KERNEL:-}
if [ -z "$kernel" ]; then
	kpkg=$(apt-cache search --names-only '^linux-image-6\.12.*cloud-amd64$' | awk '{print $1}' | grep -v -- '-dbg' | sort -V | tail -1)
	[ -n "$kpkg" ] || { echo "avx512-emu: no linux-image-6.12*-cloud-amd64 package; set KERNEL" >&2; exit 2; }
	if [ ! -f "$work/$kpkg.vmlinuz" ]; then
		(cd "$work" && rm -rf kx && apt-get download "$kpkg" >/dev/null && dpkg-deb -x "$kpkg"_*.deb kx &&
			cp kx/boot/vmlinuz-* "$kpkg.vmlinuz" && rm -rf kx "$kpkg"_*.deb)
	fi
	kernel=$work/$kpkg.vmlinuz
fi

# The machine's files: the test binary as /t.test, its arguments, and an
# init that runs it.
root=$work/root
iso=$work/iso
rm -rf "$root" "$iso"
mkdir -p "$root" "$iso/boot/grub"
CGO_ENABLED=0 go test -c -o "$root/t.test" "$pkg"
CGO_ENABLED=0 go build -o "$root/init" ./scripts/avx512emu/init.go
printf '%s\n' -test.v -test.count=1 -test.run "$tests" >"$root/args"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$iso/boot/initrd.gz")
cp "$kernel" "$iso/boot/vmlinuz"
# clearcpuid: Bochs 2.7 reported XSAVES/XSAVEC (and PKU) state sizes that
# Linux rejects, turning XSAVE and with it AVX off; kept for Bochs 3.
cat >"$iso/boot/grub/grub.cfg" <<'EOF'
set timeout=0
serial --unit=0 --speed=115200
terminal_output serial
menuentry "headroom avx512 tests" {
  linux /boot/vmlinuz console=ttyS0 loglevel=4 nokaslr mitigations=off tsc=reliable lpj=2000000 nopku no5lvl clearcpuid=pku,xsaves,xsavec lsm=capability nowatchdog audit=0 ibt=off
  initrd /boot/initrd.gz
}
EOF
grub-mkrescue -o "$work/boot.iso" "$iso" >/dev/null 2>&1

vga=$bios/VGABIOS-lgpl/VGABIOS-lgpl-latest.bin
[ -f "$vga" ] || vga=$bios/VGABIOS-lgpl-latest
cat >"$work/bochsrc" <<EOF
megs: 512
cpu: model=$model, count=1, ips=200000000
romimage: file=$bios/BIOS-bochs-latest
vgaromimage: file=$vga
ata0-master: type=cdrom, path=$work/boot.iso, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev=$work/serial.txt
display_library: nogui
log: $work/bochs.log
panic: action=fatal
clock: sync=none, time0=local
EOF
rm -f "$work/serial.txt"
echo "avx512-emu: booting ($model); the console goes to $work/serial.txt" >&2
timeout "$limit" "$bochs" -q -f "$work/bochsrc" >"$work/bochs.out" 2>&1 || true
# The console's lines end in CR LF. Print each test's outcome, what the
# tests log, and failures; succeed only if the test binary did.
tr -d '\r' <"$work/serial.txt" | sed -n '/^EMU cpu/,/^EMU done/p' >"$work/tests.txt"
grep -E '^(EMU |--- |PASS$|FAIL|panic)|^    [^ -].*_test\.go:[0-9]+:' "$work/tests.txt" || true
grep -q '^EMU done: err=<nil>' "$work/tests.txt" && grep -qx 'PASS' "$work/tests.txt"
