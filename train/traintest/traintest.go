// Package traintest checks training programs from their tests: that a bad
// command line is refused as a usage error before any work starts.
package traintest

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/train"
)

// Main is a program's Main: it runs args and returns the exit status.
type Main func(args []string, stdout, stderr io.Writer) int

// Refusal is a command line that must be refused: Args are added to the
// base arguments, and the message must contain each of Want (the flag,
// its value, what is expected). "{dir}" in Args and Want stands for the
// test's folder.
type Refusal struct {
	Args []string
	Want []string
}

// Refuse returns the Refusal of args (split at spaces) with the message
// parts want.
func Refuse(args string, want ...string) Refusal {
	return Refusal{Args: strings.Fields(args), Want: want}
}

// Refused checks each case: run in a folder of its own whose "data"
// subfolder is empty and given as --data (before base), main must exit with
// train.ExitUsage, print nothing on stdout (no header: no model was built,
// no step taken), name the problem on stderr as the case wants, and leave
// the folder as it was (no file written). It first runs base alone, which
// must fail with train.ExitError reading the empty --data folder: the
// refusals come before the data is loaded, and base is otherwise valid.
func Refused(t *testing.T, main Main, base []string, cases []Refusal) {
	t.Helper()
	code, stdout, stderr, _, _ := run(t, main, base, nil)
	if code != train.ExitError || stdout != "" || !strings.Contains(stderr, "data") {
		t.Fatalf("%q with an empty --data folder: exit %d, stdout %q, stderr %q; want %d and an error reading the data",
			base, code, stdout, stderr, train.ExitError)
	}
	for _, c := range cases {
		code, stdout, stderr, changed, dir := run(t, main, base, c.Args)
		ok := code == train.ExitUsage && stdout == "" && len(changed) == 0 && !trace.MatchString(stderr)
		for _, w := range c.Want {
			ok = ok && strings.Contains(stderr, strings.ReplaceAll(w, "{dir}", dir))
		}
		if !ok {
			t.Errorf("%q: exit %d, stdout %q, stderr %q, files written %q; want exit %d, no output, no file, and a message with %q",
				c.Args, code, stdout, stderr, changed, train.ExitUsage, c.Want)
		} else {
			t.Logf("%q: %s", c.Args, strings.TrimSpace(stderr))
		}
	}
}

// trace matches a Go panic trace.
var trace = regexp.MustCompile(`panic|goroutine \d+ \[`)

// run runs main in a new folder and returns its exit status, its output,
// the files that appeared in the folder and the folder.
func run(t *testing.T, main Main, base, args []string) (code int, stdout, stderr string, changed []string, dir string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := files(t, dir)
	all := append([]string{"--data", filepath.Join(dir, "data")}, base...)
	for _, a := range args {
		all = append(all, strings.ReplaceAll(a, "{dir}", dir))
	}
	var out, errb bytes.Buffer
	code = main(all, &out, &errb)
	for _, f := range files(t, dir) {
		if !slices.Contains(before, f) {
			changed = append(changed, f)
		}
	}
	return code, out.String(), errb.String(), changed, dir
}

// files lists the paths under dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		out = append(out, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ReadReport reads a JSON run report (--report) as a map.
func ReadReport(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// Unavailable checks that main, run with args and --device cuda on a
// machine where the CUDA driver cannot be loaded (HEADROOM_LIBCUDA names a
// file that does not exist), exits with train.ExitUnavailable, prints
// nothing on stdout and no panic trace, and names the device, what is
// missing and the way out (--device cpu) on stderr.
func Unavailable(t *testing.T, main Main, args []string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HEADROOM_LIBCUDA", filepath.Join(dir, "no-libcuda.so.1"))
	var out, errb bytes.Buffer
	code := main(append(append([]string(nil), args...), "--device", "cuda"), &out, &errb)
	stderr := errb.String()
	if code != train.ExitUnavailable || out.Len() != 0 || trace.MatchString(stderr) ||
		!strings.Contains(stderr, "--device cuda: ") || !strings.Contains(stderr, "use --device cpu") {
		t.Errorf("%q --device cuda with no driver: exit %d, stdout %q, stderr %q; want exit %d, no output and a message naming --device cuda and --device cpu",
			args, code, out.String(), stderr, train.ExitUnavailable)
	} else {
		t.Logf("%q --device cuda: exit %d: %s", args, code, strings.TrimSpace(stderr))
	}
}
