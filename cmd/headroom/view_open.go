package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// openWait is how long --open waits for the opener to fail before leaving
// it running (a browser started directly runs until it is closed).
const openWait = 2 * time.Second

// openBrowser opens path in the system browser: the first command of
// $BROWSER found (a list separated by ':', each with %s for the path or the
// path appended, as Python's webbrowser reads it), else xdg-open (open on
// macOS). It says on stderr when there is none or the opener fails.
func openBrowser(path string, stderr io.Writer) {
	argv := browserCommand(path)
	if argv == nil {
		fmt.Fprintf(stderr, "headroom view: --open: no browser found (set $BROWSER, or install %s); open %s in a browser\n", opener(), path)
		return
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "headroom view: --open: starting %s: %v; open %s in a browser\n", argv[0], err, path)
		return
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(stderr, "headroom view: --open: %s %s: %v; open %s in a browser\n", argv[0], path, err, path)
		}
	case <-time.After(openWait):
	}
}

// browserCommand returns the command line that opens path, or nil.
func browserCommand(path string) []string {
	for _, entry := range strings.Split(os.Getenv("BROWSER"), ":") {
		f := strings.Fields(entry)
		if len(f) == 0 {
			continue
		}
		exe, err := exec.LookPath(f[0])
		if err != nil {
			continue
		}
		argv, subst := []string{exe}, false
		for _, a := range f[1:] {
			if strings.Contains(a, "%s") {
				a, subst = strings.ReplaceAll(a, "%s", path), true
			}
			argv = append(argv, a)
		}
		if !subst {
			argv = append(argv, path)
		}
		return argv
	}
	if exe, err := exec.LookPath(opener()); err == nil {
		return []string{exe, path}
	}
	return nil
}

// opener is the system's command that opens a file in its application.
func opener() string {
	if runtime.GOOS == "darwin" {
		return "open"
	}
	return "xdg-open"
}
