#include <rocksdb/c.h>
