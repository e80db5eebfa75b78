#ifndef ATTEST_GATEWAY_CMIMALLOC_SHIM_H
#define ATTEST_GATEWAY_CMIMALLOC_SHIM_H
// mimalloc (Debian 12: libmimalloc-dev, runtime libmimalloc2.0) built to override malloc/free: linked
// into the attest-gateway executable only, where it serves every malloc of the process (Swift runtime,
// OpenSSL, nghttp2, hiredis). Gateway's HeapAllocator reports which allocator serves a process.
#include <mimalloc.h>
#endif
