package bench

import (
	"testing"

	"github.com/headroom-ml/headroom/device/cuda/cudatest"
	"github.com/headroom-ml/headroom/plan"
)

// TestMain runs the package's tests with the emulated cuda device loaded
// (HEADROOM_CUDA_REAL=1: the machine's GPU).
func TestMain(m *testing.M) { cudatest.Main(m, 0, 1) }

// TestCUDABench benches plain on the ResNet on the emulated GPU (Tiny, two
// training steps): the measured step ran on cuda:0, its peak by tag is the
// cuda plan's (plan.Predict with Device cuda: meta devices holding
// cuBLAS's workspace), and the example's training run on cuda reached the
// same peak bytes tag by tag.
func TestCUDABench(t *testing.T) {
	techs, err := Select([]string{"plain"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(Config{Mode: Tiny, Models: []string{"resnet"}, Techniques: techs, Steps: 2, Device: plan.CUDA})
	if err != nil {
		t.Fatal(err)
	}
	if res.Device != plan.CUDA || len(res.Rows) != 1 {
		t.Fatalf("bench on %q with %d rows, want cuda and 1", res.Device, len(res.Rows))
	}
	r := res.Rows[0]
	if r.Timeline == nil || r.Timeline.Device != "cuda:0" {
		t.Fatalf("the measured step's timeline is %+v, want cuda:0's", r.Timeline)
	}
	c := plan.Config{Model: "small", Batch: r.Batch, Steps: sizeOf(Tiny).planSteps, Device: plan.CUDA}
	pred, err := plan.Predict(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Peak != pred.Ranks[0].PeakBytes || !r.SamePeak || r.TrainSteps != 2 {
		t.Errorf("cuda bench row: peak %+v, training run %+v (same %v, %d steps); the cuda plan predicts %+v",
			r.Peak, r.TrainPeak, r.SamePeak, r.TrainSteps, pred.Ranks[0].PeakBytes)
	}
	t.Logf("resnet plain on cuda: peak %d bytes (workspace %d), loss %.4f, %s %.4f", r.Peak.Total, r.Peak.Workspace, r.FinalLoss, r.EvalMetric, r.Eval)
}
