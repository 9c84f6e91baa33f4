// Package prune trades a little accuracy for a smaller, faster model by
// removing whole channels: structured pruning that really shrinks the
// parameter tensors, not a mask.
//
// PyTorch's torch.nn.utils.prune multiplies weights by a mask (memory goes
// up until remove(), and shapes never change). Here the pruned layers get
// new, smaller parameter tensors and the old ones are released, so the
// device's parameter bytes and the forward's FLOPs and activations go down
// at once, and the consumers of the removed channels are cut to match:
//
//	rep, err := prune.ResNet(model, 0.3, prune.Options{})   // 30% of each block's inner channels
//	fmt.Print(rep.Summary())                                  // parameters, bytes, FLOPs before → after
//	opt.Release()                                             // the old optimizer's state is for the old tensors
//	opt, err = optim.NewSGD(model.Params(), cfg)              // fine-tune with a new one
//
// # What is removed
//
// ResNet prunes the channels inside each residual block (BasicBlock:
// conv1 → bn1 → conv2; Bottleneck: conv1 → bn1 → conv2 and conv2 → bn2 →
// conv3), so every residual addition keeps its width. GPT prunes attention
// heads (rows of q, k and v in c_attn, columns of attn.c_proj, the head
// count) and MLP hidden units (rows of c_fc, columns of mlp.c_proj). In a
// group of n units, KeepCount(n, fraction) = n − round(fraction·n) remain
// (at least one), chosen by rank within the layer; the shapes after
// pruning depend only on the fractions, so a pruned model saved with
// nn.Save loads with nn.Load into a fresh model pruned with the same
// fractions.
//
// # Knobs
//
//   - fraction (ResNet) and heads, mlp (GPT): the share of units removed,
//     in [0, 1); 0 removes nothing.
//   - Options.By: L1 (the default, Σ|w| of a unit's outgoing weights) or
//     Taylor (Σ|w·∂L/∂w|, from gradients the caller accumulated with
//     backward before pruning).
//   - Options.Height, Options.Width: the image size the ResNet report's
//     FLOPs are counted for; 0 means 224 (ImageNet stem) or 28 (small).
//   - Options.Tokens: the sequence length of the GPT report's FLOPs; 0
//     means the model's context.
//
// # Memory and errors
//
// Ranking reads the weights (and, for Taylor, their gradients) to the host
// as float64; the new tensors are filled on the device by index selects.
// Every new tensor is made before any old one is released, so a failure —
// a bad fraction, Taylor ranking without gradients, running out of memory
// — leaves the model as it was; the price is that old and new parameters
// are both allocated while pruning runs. Call Device.ResetPeak afterwards when
// the peak of the pruned model alone is wanted. The new tensors carry the
// old names and have no gradients; an optimizer made before pruning holds
// state for tensors that no longer exist and must be replaced. After
// pruning no parameter of the model has a gradient.
//
// # Fine-tuning
//
// FineTune runs a training step function a given number of times and
// returns the losses; the step function owns the optimizer and the data.
package prune
