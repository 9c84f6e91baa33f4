// Package optim updates parameters from their gradients: SGD, Adam and
// AdamW, gradient clipping and learning-rate schedules. Optimizer state
// lives on the parameters' device under the optimizer tag.
package optim
