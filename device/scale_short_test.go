//go:build race || noasm

package device_test

// fullScale: see scale_full_test.go.
const fullScale = false
