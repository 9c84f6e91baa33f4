package cpu

// TileScratchBytes is one worker's tile scratch, for the heap tests.
const TileScratchBytes = tileScratchBytes
