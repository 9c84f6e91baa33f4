// Command resnet trains a ResNet on MNIST (or CIFAR-10, or synthetic
// images) and reports exactly where its memory went.
//
//	go run ./examples/resnet                         # small ResNet, MNIST, 2 epochs
//	go run ./examples/resnet --amp --checkpoint      # bf16 autocast, √n checkpointing
//	go run ./examples/resnet --model resnet18 --steps 2 --batch 32 --report r.json
//
// See run.Main for every flag.
package main
