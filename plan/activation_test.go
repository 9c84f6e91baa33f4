package plan

import "testing"

// TestOffloadActivationsSaves: on meta, activation offload lowers the
// device's activation peak of the GPT and the ResNet below plain's, puts
// activation bytes on the host, and the same config measured on cpu gives
// the same bytes (device and host).
func TestOffloadActivationsSaves(t *testing.T) {
	for _, c := range []Config{{Model: "transformer", Batch: 4, Seq: 16}, {Model: "small", Batch: 4}} {
		plain, err := Predict(c)
		if err != nil {
			t.Fatal(err)
		}
		c.OffloadActivations = true
		off := predictionEqualsMeasurement(t, c.Model+" offload activations", c)
		p, o := plain.Ranks[0], off.Ranks[0]
		t.Logf("%s: activation peak plain %d B, offloaded %d B; host activation peak %d B", c.Model, p.PeakBytes.Activation, o.PeakBytes.Activation, o.Host.Activation)
		if o.PeakBytes.Activation >= p.PeakBytes.Activation || o.Host == nil || o.Host.Activation == 0 {
			t.Errorf("%s: activation peak %d B offloaded, %d B plain; host %+v: want less on the device and some on the host", c.Model, o.PeakBytes.Activation, p.PeakBytes.Activation, o.Host)
		}
	}
}
