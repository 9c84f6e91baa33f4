package train

import (
	"errors"
	"fmt"
)

// Alerted reports whether err is a Monitor's *Alert.
func Alerted(err error) bool {
	var a *Alert
	return errors.As(err, &a)
}

// StopOnAlert saves a resumable snapshot through save — to --save, or
// to "<prog>-alert.safetensors" — and returns the alert extended with
// where the snapshot is and how to resume.
func (c *Common) StopOnAlert(alert error, prog string, save func(path string) error) error {
	path := c.Save
	if path == "" {
		path = prog + "-alert.safetensors"
	}
	if err := save(path); err != nil {
		return fmt.Errorf("%w; saving a snapshot failed too: %v", alert, err)
	}
	return fmt.Errorf("%w\nstopped; saved a resumable snapshot to %s: resume with --resume %s and more memory (--mem-limit) or checkpointing (--checkpoint); --accum, --amp or another --batch change the run and need --override", alert, path, path)
}
