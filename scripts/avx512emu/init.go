//go:build ignore

// Command init is PID 1 of the emulated machine that scripts/avx512-emu.sh
// boots: it runs /t.test (a test binary) with the arguments in /args, one
// per line, prints the CPU features Go sees and the test's outcome on the
// console, and powers the machine off.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/cpu"
)

func main() {
	_ = os.MkdirAll("/tmp", 0o777)
	_ = os.MkdirAll("/dev", 0o755)
	_ = os.MkdirAll("/proc", 0o555)
	if err := syscall.Mount("devtmpfs", "/dev", "devtmpfs", 0, ""); err != nil {
		fmt.Println("EMU mount /dev:", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", 0, ""); err != nil {
		fmt.Println("EMU mount /proc:", err)
	}
	os.Setenv("TMPDIR", "/tmp")
	os.Setenv("HOME", "/tmp")
	x := cpu.X86
	fmt.Printf("EMU cpu: avx2=%v fma=%v avx512f=%v bw=%v vl=%v dq=%v vnni=%v\n",
		x.HasAVX2, x.HasFMA, x.HasAVX512F, x.HasAVX512BW, x.HasAVX512VL, x.HasAVX512DQ, x.HasAVX512VNNI)
	b, err := os.ReadFile("/args")
	if err != nil {
		fmt.Println("EMU error:", err)
	}
	var args []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			args = append(args, l)
		}
	}
	start := time.Now()
	cmd := exec.Command("/t.test", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	err = cmd.Run()
	fmt.Printf("EMU done: err=%v after %v\n", err, time.Since(start).Round(time.Second))
	syscall.Sync()
	time.Sleep(3 * time.Second) // let the console drain before power-off
	_ = syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
}
