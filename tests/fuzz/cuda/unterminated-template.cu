template <typename T, int N = (1 << 3 > 2)> __global__ void k(T* x) { x[threadIdx.x] = T(N); 
 template<template<