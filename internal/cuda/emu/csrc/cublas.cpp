// cublas.cpp: the fake cuBLAS (in progress).
