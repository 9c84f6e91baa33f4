package parallel

// SetStageBytes sets the staging bound of the in-process group (see
// StageBytes) for a test and returns the function that puts it back.
func SetStageBytes(n int) (restore func()) {
	old := stageBytes
	stageBytes = n
	return func() { stageBytes = old }
}
