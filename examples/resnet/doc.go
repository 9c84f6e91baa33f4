// Command resnet trains a ResNet on MNIST (or CIFAR-10, or synthetic
// images) and reports exactly where its memory went.
//
//	go run ./examples/resnet                         # small ResNet, MNIST, 2 epochs
//	go run ./examples/resnet --amp --checkpoint      # bf16 autocast, √n checkpointing
//	go run ./examples/resnet --model resnet18 --steps 2 --batch 32 --report r.json
//	go run ./examples/resnet --steps 100 --stop-after 40 --save s.safetensors
//	go run ./examples/resnet --resume s.safetensors  # the same run, steps 41 to 100
//	go run ./examples/resnet --optimizer adamw8bit --lr 3e-3  # AdamW, moments in 8 bits
//
// Every flag is checked before any work starts (-help lists them with
// their ranges). --resume takes the snapshot's flags; one that changes the
// run (--steps, --batch, --lr, --amp, …) needs --override. Exit status: 0
// success, 1 error, 3 out of memory (its explanation on stderr), 4 a
// --mem-alert stopped the run (with a resumable snapshot), 64 a bad flag;
// see package train. See run.Main for every flag.
package main
