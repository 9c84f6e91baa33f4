// cublaslt.cpp: the fake cuBLASLt (in progress).
