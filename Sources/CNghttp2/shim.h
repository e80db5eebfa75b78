#ifndef ATTEST_GATEWAY_CNGHTTP2_SHIM_H
#define ATTEST_GATEWAY_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#endif
