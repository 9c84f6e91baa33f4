package train_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/device"
	"github.com/headroom-ml/headroom/train"
)

func TestParseDevice(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		index      int
		ok         bool
	}{
		{"cpu", "cpu", 0, true}, {"cuda", "cuda", 0, true}, {"cuda:0", "cuda", 0, true}, {"cuda:3", "cuda", 3, true},
		{"cpu:1", "", 0, false}, {"cuda:", "", 0, false}, {"cuda:-1", "", 0, false}, {"cuda:01", "", 0, false},
		{"cuda:x", "", 0, false}, {"gpu", "", 0, false}, {"", "", 0, false}, {"CUDA", "", 0, false},
	} {
		kind, index, err := train.ParseDevice(tc.name)
		var ue *train.UsageError
		if tc.ok != (err == nil) || kind != tc.kind || index != tc.index || (err != nil && !errors.As(err, &ue)) {
			t.Errorf("ParseDevice(%q) = %q, %d, %v; want %q, %d, ok %v (else a *UsageError)", tc.name, kind, index, err, tc.kind, tc.index, tc.ok)
		}
	}
}

func TestOpenDeviceCPU(t *testing.T) {
	dev, err := train.OpenDevice("cpu", device.Options{Capacity: 1 << 20})
	if err != nil || dev.Kind() != "cpu" || dev.Capacity() != 1<<20 {
		t.Fatalf("OpenDevice(cpu) = %v, %v; want cpu:0 with a 1 MiB capacity", dev, err)
	}
	dev.Close()
}

func TestOpenDeviceNoCUDA(t *testing.T) {
	t.Setenv("HEADROOM_LIBCUDA", t.TempDir()+"/missing.so")
	_, err := train.OpenDevice("cuda:1", device.Options{})
	var de *train.DeviceError
	if !errors.As(err, &de) || de.Name != "cuda:1" || !strings.Contains(err.Error(), "--device cuda:1: ") || !strings.Contains(err.Error(), "use --device cpu") {
		t.Fatalf("OpenDevice(cuda:1) with no driver: %v; want a *train.DeviceError naming cuda:1 and --device cpu", err)
	}
}
