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
// A compression state set up once (LZ4_createStream) and reset cheaply for each block, which stays
// independent: LZ4_compress_default zeroes a 16 KiB table for every block instead.
static inline void *clz4_stream_create(void) {
    return LZ4_createStream();
}
static inline void clz4_stream_free(void *stream) {
    LZ4_freeStream((LZ4_stream_t *)stream);
}
static inline int clz4_compress_with(void *stream, const void *src, void *dst, int srcCount, int dstCapacity) {
    LZ4_resetStream_fast((LZ4_stream_t *)stream);
    return LZ4_compress_fast_continue((LZ4_stream_t *)stream, (const char *)src, (char *)dst, srcCount, dstCapacity, 1);
}
static inline int clz4_decompress(const void *src, void *dst, int srcCount, int dstCapacity) {
    return LZ4_decompress_safe((const char *)src, (char *)dst, srcCount, dstCapacity);
}
#endif
