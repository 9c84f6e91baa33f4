package layers

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/headroom-ml/headroom"

type pkg struct {
	ImportPath  string
	Imports     []string
	TestImports []string
}

// layerOf returns the layer of a module-relative path, or -1.
func layerOf(rel string) int {
	for i, group := range Order {
		for _, p := range group {
			if p == rel || (strings.HasSuffix(p, "/...") && strings.HasPrefix(rel+"/", strings.TrimSuffix(p, "...")) && rel != strings.TrimSuffix(p, "/...")) {
				return i
			}
		}
	}
	return -1
}

func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	n := 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		l := layerOf(rel)
		if l < 0 {
			t.Errorf("package %s has no layer: add it to layers.Order", rel)
			continue
		}
		check := func(imps []string, allowSame bool) {
			for _, imp := range imps {
				if !strings.HasPrefix(imp, module) {
					continue
				}
				ir := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
				il := layerOf(ir)
				if il < 0 {
					t.Errorf("%s imports %s, which has no layer", rel, ir)
				} else if il > l || (il == l && !allowSame && ir != rel) {
					t.Errorf("%s (layer %d) imports %s (layer %d): imports must point down", rel, l, ir, il)
				}
			}
		}
		check(p.Imports, false)
		check(p.TestImports, true)
	}
	if n < 5 {
		t.Fatalf("go list found only %d packages", n)
	}
}

func TestLayerOf(t *testing.T) {
	for rel, want := range map[string]int{"dtype": 0, "device/cpu": 3, "examples/resnet": 14, "examples/resnet/run": 11, "plan": 12, "bench": 13, "cmd/headroom": 14, "examples": -1, "nope": -1} {
		if got := layerOf(rel); got != want {
			t.Errorf("layerOf(%q) = %d, want %d", rel, got, want)
		}
	}
}
