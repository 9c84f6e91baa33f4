package cpu

// TileScratchBytes is one worker's tile scratch, for the heap tests.
const TileScratchBytes = tileScratchBytes

// SetInRegister selects the in-register 16-bit kernels (true, the
// default) or the tile path, and returns a function that restores the
// previous choice.
func SetInRegister(on bool) (restore func()) {
	saved := inRegister
	inRegister = on
	return func() { inRegister = saved }
}
