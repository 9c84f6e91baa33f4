package main
import ("fmt";"os";"time";"github.com/headroom-ml/headroom/internal/cuda/emu")
func main(){ a,_:=os.ReadFile("internal/cuda/emu/testdata/sum.cu"); b,_:=os.ReadFile("internal/cuda/emu/testdata/common.cuh")
t:=time.Now(); l,err:=emu.Build(map[string][]byte{"sum.cu":a,"common.cuh":b}); fmt.Println(l,err,time.Since(t))}
