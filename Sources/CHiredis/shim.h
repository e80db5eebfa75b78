#ifndef ATTEST_GATEWAY_CHIREDIS_SHIM_H
#define ATTEST_GATEWAY_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#endif
