// driver.cpp: the fake CUDA driver API (in progress).
#include "registry.h"
#include "sched.h"
