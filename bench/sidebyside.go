package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/headroom-ml/headroom/device"
)

// avx512Cores are OpenBLAS's cores with AVX-512 kernels.
var avx512Cores = []string{"SkylakeX", "Cooperlake", "SapphireRapids"}

// pair is one model and technique on both sides.
type pair struct {
	model, technique   string
	params, torch      int64
	peak               int64
	secs               float64
	loss, torchLoss    float64
	timed, speed, mean bool
	t                  TorchRow
	rounds             []float64 // headroom's rounds' medians (MergeRounds), or nil
}

// pairs matches PyTorch's rows with headroom's: the loss models' rows and
// the speed rows.
func pairs(r *Result, t *TorchResult) []pair {
	var out []pair
	for _, tr := range t.Rows {
		p := pair{model: tr.Model, technique: tr.Technique, torch: tr.Params, torchLoss: tr.FinalLoss, speed: tr.Speed, t: tr}
		found := false
		if tr.Speed {
			for _, s := range r.Speed {
				if s.Model == tr.Model && s.Technique == tr.Technique {
					p.params, p.peak, p.secs, p.timed, found = s.Params, s.PeakBytes, s.SecondsPerStep, true, true
					p.rounds = s.RoundSeconds
				}
			}
		} else {
			for _, h := range r.Rows {
				if h.Model == tr.Model && h.Technique == tr.Technique {
					p.params, p.peak, p.secs, p.loss, found = h.Params, h.Peak.Total, h.SecondsPerStep, h.FinalLoss, true
					if p.timed = len(h.StepSeconds) > 0; p.timed {
						p.secs = Median(h.StepSeconds)
					}
					p.mean = !p.timed
				}
			}
		}
		if found {
			out = append(out, p)
		}
	}
	return out
}

// SideBySide renders headroom's rows and PyTorch's for the models and
// techniques both ran, as a Markdown table under the environment of both
// (CPU, kernel path, threads, torch and oneDNN versions, PyTorch's BLAS).
// A PyTorch on the reference BLAS gets a warning and every row is marked
// "reference BLAS" (headroom bench --torch refuses to run such a
// comparison; a result file may still hold one). Parameter counts that
// differ are marked "≠".
func SideBySide(r *Result, t *TorchResult) string {
	var b strings.Builder
	blas := t.BLAS()
	fmt.Fprintf(&b, "headroom and PyTorch on the CPU, same models, batches, optimizers and shapes\n\n")
	fmt.Fprintf(&b, "- CPU: %s; headroom kernels %s, %d threads (GOMAXPROCS)\n", orDash(r.CPUModel), r.Kernels, r.Threads)
	fmt.Fprintf(&b, "- PyTorch %s, oneDNN %s, BLAS %s, %d intra-op and %d inter-op threads\n", t.Torch, orDash(t.OneDNN), blas, t.Threads, t.InteropThreads)
	if t.OpenBLASCore != "" {
		fmt.Fprintf(&b, "- OpenBLAS core %s, %d threads\n", t.OpenBLASCore, t.OpenBLASThreads)
		if strings.Contains(r.Kernels, "avx512") && !slices.Contains(avx512Cores, t.OpenBLASCore) {
			fmt.Fprintf(&b, "- WARNING: OpenBLAS ran its %s kernels, not AVX-512 ones, on an AVX-512 CPU: PyTorch's F32 matmuls and convolutions are slower than they could be (OPENBLAS_CORETYPE=SkylakeX)\n", t.OpenBLASCore)
		}
	}
	fmt.Fprintf(&b, "- PyTorch kernels: ATen %s, oneDNN %s, OpenBLAS core %s\n", orDash(t.ATenCapability), orDash(t.OneDNNISA), orDash(t.OpenBLASCore))
	b.WriteString(isaNotes(r, t))
	warm := 0
	for _, tr := range t.Rows {
		warm = max(warm, tr.Warmup)
	}
	fmt.Fprintf(&b, "- s/step: the median of the timed steps after %d untimed warm-ups, on both sides; PyTorch's profiler only in a separate untimed step (its peak)\n", warm)
	if blas.Reference {
		fmt.Fprintf(&b, "- WARNING: PyTorch ran on the %s: its times are not PyTorch's (apt-get install libopenblas0-pthread)\n", blas)
	}
	b.WriteString("\n| model | technique | threads | params headroom | params torch | peak headroom | peak torch | s/step headroom | s/step torch | headroom ÷ torch | loss headroom | loss torch |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var notes []string
	for _, p := range pairs(r, t) {
		tech := p.technique
		if blas.Reference {
			tech += " (reference BLAS)"
		}
		params := fmt.Sprint(p.params)
		if p.params != p.torch {
			params += " ≠"
			notes = append(notes, fmt.Sprintf("%s: headroom has %d parameters, PyTorch %d: not the same model", p.model, p.params, p.torch))
		}
		secs := fmt.Sprintf("%.3f", p.secs)
		if p.mean {
			secs += " (mean)"
		}
		tp := "–"
		if p.t.PeakBytes > 0 {
			tp = device.FormatBytes(p.t.PeakBytes)
		}
		loss, tloss := fmt.Sprintf("%.4f", p.loss), fmt.Sprintf("%.4f", p.torchLoss)
		if p.speed {
			loss, tloss = "–", "–"
		}
		q := ratio(p.secs, p.t.SecondsPerStep)
		if rr := roundRatios(p.rounds, p.t.RoundSeconds); rr != nil {
			q = Median(rr)
			notes = append(notes, fmt.Sprintf("%s %s: headroom ÷ torch by round %s (s/step headroom %s, torch %s)", p.model, p.technique,
				joinFloats(rr, "%.2f"), joinFloats(p.rounds, "%.3f"), joinFloats(p.t.RoundSeconds, "%.3f")))
		}
		fmt.Fprintf(&b, "| %s | %s | %d / %d | %s | %d | %s | %s | %s | %.3f (%d) | %.2f | %s | %s |\n", p.model, tech, r.Threads, t.Threads,
			params, p.torch, device.FormatBytes(p.peak), tp, secs, p.t.SecondsPerStep, len(p.t.StepSeconds), q, loss, tloss)
		if p.t.PeakBytes == 0 && p.t.PeakNote != "" {
			notes = append(notes, fmt.Sprintf("%s %s: torch's peak %s", p.model, p.technique, p.t.PeakNote))
		}
	}
	b.WriteString("\n- threads: headroom's / PyTorch's; s/step torch: the median (of the count in parentheses); (mean): a loss run's mean step, not timed alone (bench without Timed)")
	if n := roundCount(t); n > 1 {
		fmt.Fprintf(&b, "\n- %d rounds (--rounds), the side that runs first alternating: each side's s/step is the median of its rounds' medians, headroom ÷ torch the median of the rounds' ratios", n)
	}
	if len(t.Rows) > 0 && t.Rows[0].PeakNote != "" {
		notes = append(notes, "torch's peak: "+t.Rows[0].PeakNote+"; headroom's: the allocator's exact requested bytes (peak_bytes.total)")
	}
	for _, k := range t.Skipped {
		notes = append(notes, fmt.Sprintf("%s %s: no PyTorch row, %s", k.Model, k.Technique, k.Reason))
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\n- %s", n)
	}
	b.WriteString("\n")
	return b.String()
}

// isaNotes are the lines of the ISA restriction (Result.ISA): what each
// side was told and that it is a proxy, and a warning for each PyTorch
// kernel path that is still wider than AVX2.
func isaNotes(r *Result, t *TorchResult) string {
	if r.ISA == "" {
		return ""
	}
	var b strings.Builder
	torch := ""
	if t != nil {
		torch = ", PyTorch under " + strings.Join(torchISAEnv, " ")
	}
	fmt.Fprintf(&b, "- ISA restricted to %s (--isa %s): headroom under GODEBUG=%s (kernels %s)%s; a proxy for an AVX2-only CPU such as Zen 3, not a measurement of one (this CPU's clocks, caches and memory)\n",
		r.ISA, r.ISA, ISAGodebug, r.Kernels, torch)
	if t == nil {
		return b.String()
	}
	for _, w := range []struct{ what, got string }{{"ATen", t.ATenCapability}, {"oneDNN", t.OneDNNISA}, {"OpenBLAS", t.OpenBLASCore}} {
		if strings.Contains(strings.ToUpper(w.got), "512") || slices.Contains(avx512Cores, w.got) {
			fmt.Fprintf(&b, "- WARNING: PyTorch's %s still ran %s under --isa %s\n", w.what, w.got, r.ISA)
		}
	}
	return b.String()
}

// speedTable renders the speed rows alone (a bench without PyTorch).
func speedTable(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "speed rows: CPU %s, kernels %s, %d threads; s/step the median of the timed steps after the warm-ups\n\n", orDash(r.CPUModel), r.Kernels, r.Threads)
	b.WriteString(isaNotes(r, nil))
	b.WriteString("| model | technique | params | batch | peak | s/step | samples/s | timed steps | warm-up |\n|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range r.Speed {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %.3f | %.1f | %d | %d |\n", s.Model, s.Technique, s.Params, s.Batch,
			device.FormatBytes(s.PeakBytes), s.SecondsPerStep, s.SamplesPerSec, len(s.StepSeconds), s.Warmup)
	}
	return b.String()
}

// ratio is a / b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// joinFloats formats xs with format, comma-separated.
func joinFloats(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}

// roundCount is the rounds MergeRounds merged into t's rows (1 when none).
func roundCount(t *TorchResult) int {
	n := 1
	for _, r := range t.Rows {
		n = max(n, len(r.RoundSeconds))
	}
	return n
}
