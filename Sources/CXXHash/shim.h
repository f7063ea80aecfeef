#ifndef STRATA_CXXHASH_SHIM_H
#define STRATA_CXXHASH_SHIM_H
#include <xxhash.h>

static inline unsigned long long cxxh3_64(const void *data, size_t count, unsigned long long seed) {
    return (unsigned long long)XXH3_64bits_withSeed(data, count, (XXH64_hash_t)seed);
}
#endif
