#ifndef STRATA_CLZ4_SHIM_H
#define STRATA_CLZ4_SHIM_H
#include <lz4.h>

// Wrappers taking void pointers so that the char * casts stay in C.
static inline int clz4_compress_bound(int inputCount) {
    return LZ4_compressBound(inputCount);
}
static inline int clz4_compress(const void *src, void *dst, int srcCount, int dstCapacity) {
    return LZ4_compress_default((const char *)src, (char *)dst, srcCount, dstCapacity);
}
static inline int clz4_decompress(const void *src, void *dst, int srcCount, int dstCapacity) {
    return LZ4_decompress_safe((const char *)src, (char *)dst, srcCount, dstCapacity);
}
#endif
