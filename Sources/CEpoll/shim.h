#ifndef ATTEST_GATEWAY_CEPOLL_SHIM_H
#define ATTEST_GATEWAY_CEPOLL_SHIM_H
/* Linux epoll (not part of Swift's Glibc module): GatewayHTTP's EventLoopPoller. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
