// Package parallel trains one model on several devices: data parallelism
// replicates the model and splits the batch; ZeRO shards the optimizer
// state, gradients and parameters across the ranks instead of replicating
// them; offload keeps the optimizer on a host device.
package parallel
