//go:build !race && !noasm

package device_test

// fullScale runs the viewer's tests at full size (TestViewPeakMatchesAtPeak
// at 10M events, TestViewerInBrowser at 1M) in the plain test run only: the
// race and noasm runs exercise nothing more in them (one goroutine, no
// kernels) at several times the cost.
const fullScale = true
