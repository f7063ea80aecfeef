#include "CSwiftRuntime.h"

#define SWIFTCALL __attribute__((swiftcall))
#define SWIFT_CONTEXT __attribute__((swift_context))

typedef SWIFTCALL void *AllocatingInitializer(const void *metatype SWIFT_CONTEXT);

void *strata_call_allocating_initializer(const void *function, const void *metatype) {
    return ((AllocatingInitializer *)function)(metatype);
}
