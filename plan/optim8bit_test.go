package plan

import (
	"strings"
	"testing"

	"github.com/headroom-ml/headroom/dtype"
)

// TestAdamW8bitRefused: amp-params and ranks > 1 are refused before any
// model is built, with the reason.
func TestAdamW8bitRefused(t *testing.T) {
	for _, c := range []struct {
		c    Config
		want string
	}{
		{Config{Model: "transformer", Optimizer: Adam8bitName, AMP: dtype.BF16, AMPParams: true}, "master weights"},
		{Config{Model: "transformer", Optimizer: Adam8bitName, Ranks: 2}, "ranks 1"},
	} {
		_, err := Predict(c.c)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one that says %q", c.c, err, c.want)
		}
	}
}
